/*
 * The idempotency protocol of pkg/idem's Store.Do, as a Promela model.
 *
 * One (scope, key) record; three requests for it: R0 and R1 are the same
 * request (fingerprint A, a retry and its duplicate), R2 another request
 * under the same key (fingerprint B). Each DynamoDB call is one atomic step,
 * as DynamoDB documents conditional writes and transactions to be. A clock
 * process may at any time let a live lease lapse and, once, expire the record
 * (TTL: expired but still present, until it is deleted, late).
 *
 * Mirrors, and must change with:
 *   claim      claim.go condFresh, condTakeover (a CAS on the lapsed token)
 *   decide     idem.go Store.decide (what a lost claim's old item means)
 *   commit     complete.go condCommit (the fence: in progress AND my token)
 *   settle     complete.go Store.settle (completed under my token = mine)
 *   release    claim.go Store.release (in progress AND my token)
 *
 * Compile-time switches:
 *   NOFAULTS      no crash, no work error: every request must end answered
 *   NO_FENCE      negative control: the commit ignores the lease token
 *   NO_FP_CHECK   negative control: a takeover ignores the fingerprint (in
 *                 Store.decide and in condTakeover both)
 *   PER_ATTEMPT_KEY  negative control: the provider key is new per attempt
 */

#define NONE    0
#define INPROG  1
#define DONE    2

#define A 1
#define B 2

/* Store.decide takes a lapsed lease over only for the same request, and the
   takeover's condition checks the fingerprint again (defence in depth): the
   negative control NO_FP_CHECK drops both. */
#ifdef NO_FP_CHECK
#define SAME_REQUEST(fp) true
#else
#define SAME_REQUEST(fp) (fp == myfp)
#endif

#define MAXCLAIMS 2      /* Store.decide's bound, reduced for the model */
#define NREQ 3
#define NTOK 8           /* at most 2 claims by each of 3 requests, + 1 */

/* The record. */
byte status = NONE;
byte rfp;                /* fingerprint */
byte rtoken;             /* lease token, unique per claim */
bool live;               /* lease_until in the future */
bool expired;            /* expires_at in the past (TTL), item still there */
byte resp_fp;            /* the stored response: whose request made it */
byte resp_token;         /* ... and under which lease */

/* Ghost state, for the properties. */
byte next_token = 1;
byte holder[NTOK];       /* token -> request */
bool fenced[NREQ];       /* a request whose lease was replaced */
byte effects;            /* business writes committed in this record's life */
byte first_token;        /* the lease whose commit made the stored response */
byte first_fp;           /* the request the record's life began with */
byte charges;            /* provider charges in this record's life */
bool provider_done;      /* the provider has a result for the downstream key */
byte provider_fp;
byte ttl_left = 1;       /* how many TTL expiries the clock may do */

/* One attempt at the claim's conditional PutItem (fresh or takeover). */
inline claim(me, myfp) {
    atomic {
        if
        :: (status == NONE || expired) ->
            if :: status == INPROG -> fenced[holder[rtoken]] = true :: else -> skip fi;
            if :: expired -> /* a new life for the key */
                effects = 0; first_token = 0; charges = 0; provider_done = false
            :: else -> skip fi;
            status = INPROG; rfp = myfp; rtoken = next_token; next_token++;
            holder[rtoken] = me; live = true; expired = false; mytok = rtoken; won = true;
            first_fp = myfp
        :: (saw && s_status == INPROG && status == INPROG && rtoken == s_token && !live &&
#ifndef NO_FP_CHECK
            rfp == myfp &&
#endif
            !expired) ->
            fenced[holder[rtoken]] = true;
            rfp = myfp; rtoken = next_token; next_token++;
            holder[rtoken] = me; live = true; mytok = rtoken; won = true
        :: else ->
            /* ReturnValuesOnConditionCheckFailure = ALL_OLD */
            saw = true; s_status = status; s_fp = rfp; s_token = rtoken; s_live = live;
            s_expired = expired; s_resp_fp = resp_fp; s_resp_token = resp_token;
            s_first = first_token; won = false
        fi
    }
}

/* The fenced commit: business writes and the completed record, atomically. */
inline commit(me, myfp) {
    atomic {
        if
        :: (status == INPROG &&
#ifndef NO_FENCE
            rtoken == mytok &&
#endif
            true) ->
            assert(!fenced[me]);               /* a fenced holder never commits */
            assert(myfp == first_fp);          /* a takeover never changes whose key it is */
            status = DONE; resp_fp = myfp; resp_token = mytok;
            effects++;
            assert(effects <= 1);              /* at most once per record's life */
            if :: first_token == 0 -> first_token = mytok :: else -> skip fi;
            committed = true
        :: else ->
            saw = true; s_status = status; s_token = rtoken; s_resp_fp = resp_fp; s_resp_token = resp_token;
            committed = false
        fi
    }
}

/* The release after a failure: fenced on the lease token. */
inline release() {
    atomic {
        if
        :: (status == INPROG && rtoken == mytok) -> status = NONE; released = true
        :: else ->
            saw = true; s_status = status; s_token = rtoken; s_resp_fp = resp_fp; s_resp_token = resp_token;
            released = false
        fi
    }
}

/* Outcomes. */
#define EXECUTED 1
#define REPLAYED 2
#define CONFLICT 3   /* 409: in progress, or contention past MAXCLAIMS */
#define MISMATCH 4   /* 422 */
#define FENCED   5   /* 409 after a takeover: nothing committed */
#define FAILED   6   /* 5xx: the work failed, the key released */
#define CRASHED  7

byte outcome[NREQ];
byte answer_fp[NREQ];    /* whose response a request was answered with */

proctype Req(byte me; byte myfp) {
    byte mytok, claims;
    bool won, committed, released, saw;
    byte s_status, s_fp, s_token, s_resp_fp, s_resp_token;
    byte s_first;            /* ghost: the record's first committed lease, as read */
    bool s_live, s_expired;

decide:
    if
    :: (!saw || s_expired || s_status == NONE || (SAME_REQUEST(s_fp) && s_status == INPROG && !s_live)) ->
        if
        :: claims == MAXCLAIMS -> outcome[me] = CONFLICT; goto end
        :: else -> claims++
        fi;
        claim(me, myfp);
        if
        :: won -> goto work
        :: else -> goto decide
        fi
    :: else ->
        if
        :: s_fp != myfp -> outcome[me] = MISMATCH
        :: else ->
            if
            :: s_status == DONE ->
                /* A replay answers with the response that was committed
                   (the first and only one of the record as it was read),
                   and only ever a response to this same request. */
                assert(s_resp_fp == myfp);
                assert(s_resp_token == s_first);
                answer_fp[me] = s_resp_fp; outcome[me] = REPLAYED
            :: else -> outcome[me] = CONFLICT
            fi
        fi;
        goto end
    fi;

work:
#ifndef NOFAULTS
    if
    :: outcome[me] = CRASHED; goto end      /* dies after the claim */
    :: skip
    fi;
#endif
    /* The provider call, with a key derived from (scope, key): the same
       for every attempt, so a takeover gets the first charge back. */
    atomic {
#ifdef PER_ATTEMPT_KEY
        charges++
#else
        if
        :: !provider_done -> provider_done = true; provider_fp = myfp; charges++
        :: provider_done -> skip            /* replayed, or refused if another request */
        fi
#endif
    };
    assert(charges <= 1);                    /* one charge per record's life */
#ifndef NOFAULTS
    if
    :: outcome[me] = CRASHED; goto end      /* dies after the provider call */
    :: release(); outcome[me] = FAILED; goto end   /* the work returned an error */
    :: skip
    fi;
#endif
    commit(me, myfp);
    if
    :: committed ->
        /* The answer may be lost and the SDK send the transaction again;
           the engine that ignores ClientRequestToken cancels it. */
        if
        :: skip
        :: commit(me, myfp); assert(!committed)
        fi;
        if
        :: committed -> skip
        :: else -> assert(s_status == DONE && s_token == mytok)   /* settle: mine */
        fi;
        answer_fp[me] = myfp; outcome[me] = EXECUTED
    :: else ->
        if
        :: (s_status == DONE && s_token == mytok) -> answer_fp[me] = myfp; outcome[me] = EXECUTED
        :: else -> outcome[me] = FENCED     /* settle: taken over */
        fi
    fi;
end:
    /* Every request ends answered; without faults, answered with one of
       a completed response, a 409 or a 422. */
    assert(outcome[me] != 0);
#ifdef NOFAULTS
    assert(outcome[me] != FAILED && outcome[me] != CRASHED);
#endif
    assert(answer_fp[me] == 0 || answer_fp[me] == myfp)
}

/* Time: a live lease may lapse; a record may expire (once) and be deleted. */
active proctype Clock() {
end:
    do
    :: atomic { status == INPROG && live -> live = false }
    :: atomic { status != NONE && !expired && ttl_left > 0 -> expired = true; ttl_left-- }
    :: atomic { expired -> status = NONE; expired = false;
                effects = 0; first_token = 0; charges = 0; provider_done = false }
    od
}

init {
    atomic {
        run Req(0, A);
        run Req(1, A);
        run Req(2, B)
    }
}
