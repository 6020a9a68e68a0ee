/*
 * The idempotency protocol of pkg/idem's Store.Do, as a Promela model.
 *
 * One (scope, key) record; three requests for it: R0 and R1 are the same
 * request (fingerprint A, a retry and its duplicate), R2 another request
 * under the same key (fingerprint B). Each client retries what did not end
 * with an answer, after the lease it was told about is over (Retry-After).
 *
 * Each DynamoDB call is one atomic step, as DynamoDB documents conditional
 * writes and transactions to be, and every call (the claim, a takeover, the
 * commit, the lapse) may land and lose its answer: the SDK then sends the
 * same call again, which sees what the first one wrote, or gives up, which
 * leaves the outcome unknown. A commit may also be sent and given up on
 * before it lands: it lands later (after the lapse that settled it, say),
 * or never. A claim whose resends meet a transaction in flight is, to its
 * client, a claim given up on: the code lapses it as it does an unknown one. The client picks a claim's lease token before
 * sending it, as rand.Text() does, so a resend carries the same token.
 *
 * Faults, bounded so that retries can end: a crash (after the claim, or
 * after the provider call), a work error, an SDK that gives up, and a clock
 * that lets a running holder's lease run out (a slow holder) each cost one
 * of FAULTS; a crashed holder's lease runs out for free. A lost answer costs
 * one of LOST. The record may expire (TTL) once, while nobody runs, and
 * be deleted late after that.
 *
 * Mirrors, and must change with:
 *   decide     decide.go next (what the record last seen means)
 *   claim      claim.go condFresh, condTakeover (a CAS on the lapsed token),
 *              and claim's reading of its own token as won
 *   commit     lease.go condLease (the fence: in progress AND my token)
 *   settle     complete.go recordFailed, lease.go settle
 *   lapse      lease.go lapse (lease_until = 0, fenced on condLease)
 *
 * Compile-time switches:
 *   NOFAULTS         no crash, work error, give-up or slow holder (lost
 *                    answers stay): every request ends answered
 *   NO_FENCE         negative control: the commit ignores the lease token
 *   NO_FP_CHECK      negative control: a takeover ignores the fingerprint
 *                    (in next and in condTakeover both)
 *   PER_ATTEMPT_KEY  negative control: the provider key is new per attempt
 *   RELEASE_DELETE   negative control: a failure deletes the record instead
 *                    of lapsing the lease (the orphaned charge)
 *   LAPSE_KEEPS_TOKEN negative control: the lapse keeps the lease token, so
 *                    a commit still in flight lands after it
 *   NO_OWN_TOKEN     negative control: a claim does not read its own token
 *                    in the record as won (the stuck 409)
 */

#define NONE    0
#define INPROG  1
#define DONE    2

#define A 1
#define B 2

#ifdef NO_FP_CHECK
#define SAME_REQUEST(fp) true
#else
#define SAME_REQUEST(fp) (fp == myfp)
#endif

#define MAXCLAIMS 2      /* next's callers' bound (maxClaims), reduced */
#define NREQ 3
#define NTOK 24          /* tokens, lapsed ones included */

#ifdef NOFAULTS
byte faults = 0;
#else
byte faults = 1;
#endif
byte lost = 1;           /* answers that may be lost */

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
bool replaced[NTOK];     /* a lease that a claim, takeover or lapse replaced */
byte lapsed_by[NTOK];    /* a lapsed token -> the lease it lapsed */
bool inflight;           /* a commit sent, given up on, not landed yet */
byte inflight_tok, inflight_fp;
bool running[NTOK];      /* a lease whose holder is still running */
byte holding;            /* how many holders are running */
#define HOLD   running[tok] = true; holding++
#define UNHOLD running[tok] = false; holding--
byte effects;            /* business writes committed in this record's life */
byte first_token;        /* the lease whose commit made the stored response */
byte first_fp;           /* the request the record's life began with */
byte charges;            /* provider charges in this record's life */
bool provider_done;      /* the provider has a result for the downstream key */
byte provider_fp;        /* ... for this request */
bool aged;               /* the record expired once: the key may forget */
byte ttl_left = 1;

/* Outcomes. */
#define EXECUTED 1
#define REPLAYED 2
#define CONFLICT 3   /* 409: in progress, or contention past MAXCLAIMS */
#define MISMATCH 4   /* 422 */
#define FENCED   5   /* 409 after a takeover: nothing committed */
#define FAILED   6   /* 5xx: the work or a call failed, the lease lapsed */
#define CRASHED  7

byte outcome[NREQ];
byte answer_fp[NREQ];    /* whose response a request was answered with */

/* A call's answer arrives (skip), or is lost: the SDK sends the same call
   again, whose answer arrives, or gives up (gaveup). */
#define LOSE_ANSWER(call) \
    if \
    :: skip \
    :: atomic { lost > 0 -> lost-- }; \
        if \
        :: call \
        :: atomic { faults > 0 -> faults-- }; gaveup = true \
        fi \
    fi

/* The claim's conditional PutItem (fresh or takeover), carrying tok; its
   answer goes to a_*, which the caller reads only if it arrives. */
inline claim_op() {
    atomic {
        if
        :: (status == NONE || expired) ->
            /* (a resend over its own first send replaces nothing) */
            if :: status == INPROG && rtoken != tok -> replaced[rtoken] = true :: else -> skip fi;
            if :: expired -> /* a new life for the key */
                effects = 0; first_token = 0; charges = 0; provider_done = false; aged = true
            :: else -> skip fi;
            status = INPROG; rfp = myfp; rtoken = tok; live = true; expired = false;
            first_fp = myfp; a_won = true
        :: (saw && s_status == INPROG && status == INPROG && rtoken == s_token && !live &&
#ifndef NO_FP_CHECK
            rfp == myfp &&
#endif
            !expired) ->
            replaced[rtoken] = true;
            rfp = myfp; rtoken = tok; live = true; a_won = true
        :: else ->
            /* ReturnValuesOnConditionCheckFailure = ALL_OLD */
            a_status = status; a_fp = rfp; a_token = rtoken; a_live = live;
            a_expired = expired; a_resp_fp = resp_fp; a_resp_token = resp_token;
            a_first = first_token; a_won = false
        fi
    }
}

/* The commit of lease t for request fp: business writes and the completed
   record, fenced. The client may send it and give up before it lands: the
   Clock then lands it later, or never. */
inline commit_as(t, fp) {
    atomic {
        if
        :: (status == INPROG &&
#ifndef NO_FENCE
            rtoken == t &&
#endif
            true) ->
            assert(!replaced[t]);              /* a fenced or lapsed lease never commits */
            assert(fp == first_fp);            /* a takeover never changes whose key it is */
            /* no orphan: once a request's work had its outside effect, the
               key is completed with that request's response only */
            assert(!provider_done || provider_fp == fp);
            status = DONE; resp_fp = fp; resp_token = t;
            effects++;
            assert(effects <= 1);              /* at most once per record's life */
            if :: first_token == 0 -> first_token = t :: else -> skip fi;
            a_won = true
        :: else ->
            a_status = status; a_token = rtoken; a_won = false
        fi
    }
}

inline commit_op() { commit_as(tok, myfp) }

/* The lapse after a failure: lease_until = 0, and the token replaced by its
   lapsed form, fenced on the token. A resend finds its own lapse. */
inline lapse_op() {
    atomic {
        if
        :: (status == INPROG && rtoken == tok) ->
#ifdef RELEASE_DELETE
            status = NONE;
#else
            live = false; replaced[tok] = true;
#ifndef LAPSE_KEEPS_TOKEN
            lapsed_by[next_token] = tok; rtoken = next_token; next_token++;
#endif
#endif
            a_won = true
        :: (status == INPROG && rtoken != tok && lapsed_by[rtoken] == tok) -> a_won = true
        :: else -> a_status = status; a_token = rtoken; a_won = false
        fi
    }
}

/* Lapse tok's lease; its answer may be lost too (lapse_lost: the SDK gave
   up, so the caller does not know). */
inline lapse() {
    lapse_op();
    LOSE_ANSWER(lapse_op());
    lapse_lost = gaveup; gaveup = false
}

proctype Req(byte me; byte myfp) {
    byte tok, claims;
    bool saw, gaveup, lapse_lost, a_won;
    byte s_status, s_fp, s_token, s_resp_fp, s_resp_token, s_first;
    bool s_live, s_expired;
    byte a_status, a_fp, a_token, a_resp_fp, a_resp_token, a_first;
    bool a_live, a_expired;

attempt:
    skip;
    d_step { claims = 0; saw = false; tok = 0; gaveup = false };
decide:
    if
    :: (!saw || s_status == NONE || s_expired) -> goto claim            /* stepClaim */
    :: (saw && s_status != NONE && !s_expired && !SAME_REQUEST(s_fp)) ->
        outcome[me] = MISMATCH; goto end                                 /* stepMismatch */
    :: (saw && s_status == DONE && !s_expired && SAME_REQUEST(s_fp)) ->  /* stepReplay */
        /* A replay answers with the response that was committed (the
           first and only one of the record as it was read), and only ever
           a response to this same request. */
        assert(s_resp_fp == myfp);
        assert(s_resp_token == s_first);
        answer_fp[me] = s_resp_fp; outcome[me] = REPLAYED; goto end
    :: (saw && s_status == INPROG && !s_expired && SAME_REQUEST(s_fp) && s_live) ->
        /* stepBusy. Never this attempt's own claim: a claim that finds
           its own token has won. */
        assert(tok == 0 || s_token != tok);
        outcome[me] = CONFLICT; goto retry
    :: (saw && s_status == INPROG && !s_expired && SAME_REQUEST(s_fp) && !s_live) ->
        goto claim                                                       /* stepTakeover */
    fi;

claim:
    if
    :: claims == MAXCLAIMS -> outcome[me] = CONFLICT; goto retry
    :: else -> claims++
    fi;
    atomic { tok = next_token; next_token++; HOLD };
    claim_op();
    LOSE_ANSWER(claim_op());
    if
    :: gaveup -> lapse(); UNHOLD; outcome[me] = FAILED; goto retry   /* unknown: hand it back */
    :: else -> skip
    fi;
    d_step {
        saw = true; s_status = a_status; s_fp = a_fp; s_token = a_token; s_live = a_live;
        s_expired = a_expired; s_resp_fp = a_resp_fp; s_resp_token = a_resp_token; s_first = a_first
    };
    if
    :: a_won -> goto work
#ifndef NO_OWN_TOKEN
    :: (!a_won && s_status == INPROG && s_token == tok) -> goto work    /* my own claim landed */
#endif
    :: else -> UNHOLD; goto decide
    fi;

work:
#ifndef NOFAULTS
    if
    :: atomic { faults > 0 -> faults-- }; UNHOLD; outcome[me] = CRASHED; goto retry
    :: skip
    fi;
#endif
    /* The provider call, with a key derived from (scope, key): the same
       for every attempt, so a takeover gets the first charge back, and a
       different request under that key is refused by the provider. */
    atomic {
#ifdef PER_ATTEMPT_KEY
        charges++
#else
        if
        :: !provider_done -> provider_done = true; provider_fp = myfp; charges++
        :: provider_done -> skip
        fi
#endif
    };
    assert(charges <= 1);                    /* one charge per record's life */
#ifndef NOFAULTS
    if
    :: atomic { faults > 0 -> faults-- }; UNHOLD; outcome[me] = CRASHED; goto retry
    :: atomic { faults > 0 -> faults-- }; lapse(); UNHOLD; outcome[me] = FAILED; goto retry
    :: skip
    fi;
#endif
    if
    :: commit_op(); LOSE_ANSWER(commit_op())
    :: atomic { faults > 0 -> faults--; gaveup = true;     /* sent, no answer */
                inflight = true; inflight_tok = tok; inflight_fp = myfp }
    fi;
    UNHOLD;
    if
    :: gaveup ->
        /* settle: the lapse decides an unknown commit */
        gaveup = false;
        lapse();
        if
        :: lapse_lost -> outcome[me] = FAILED; goto retry                /* unknown */
        :: (!lapse_lost && a_won) -> outcome[me] = FAILED; goto retry    /* not landed, and now never */
        :: (!lapse_lost && !a_won && a_status == DONE && a_token == tok) -> skip   /* mine */
        :: (!lapse_lost && !a_won && a_status == NONE) -> outcome[me] = FAILED; goto retry  /* gone */
        :: (!lapse_lost && !a_won && a_status != NONE && !(a_status == DONE && a_token == tok)) ->
            outcome[me] = FENCED; goto retry
        fi
    :: (!gaveup && a_won) -> skip
    :: (!gaveup && !a_won && a_status == DONE && a_token == tok) -> skip /* recordFailed: mine */
    :: (!gaveup && !a_won && !(a_status == DONE && a_token == tok)) -> outcome[me] = FENCED; goto retry
    fi;
    answer_fp[me] = myfp; outcome[me] = EXECUTED; goto end;

retry:
    /* The client waits out the lease it was told about, then retries,
       until it holds an answer: a response, or a refusal. */
    !(status == INPROG && live);
    goto attempt;
end:
    assert(outcome[me] != 0);
    assert(answer_fp[me] == 0 || answer_fp[me] == myfp);
    assert(outcome[me] == EXECUTED || outcome[me] == REPLAYED || outcome[me] == MISMATCH);
    /* No orphan, for the client: the request whose work had its outside
       effect ends with its completed response, never a 422, while the
       record lives. (That every request ends at all is checked too: a
       request that could never end would be an invalid end state.) */
    assert(aged || !(provider_done && provider_fp == myfp) ||
           outcome[me] == EXECUTED || outcome[me] == REPLAYED)
}

/* Time: a lease runs out (free once its holder is gone, a fault while it
   runs); a record may expire once and be deleted. */
active proctype Clock() {
    bool a_won; byte a_status, a_token;
end:
    do
    :: atomic { inflight -> commit_as(inflight_tok, inflight_fp); inflight = false }
    :: atomic { inflight -> inflight = false }     /* it never lands */
    :: atomic { status == INPROG && live && !running[rtoken] -> live = false }
    :: atomic { status == INPROG && live && running[rtoken] && faults > 0 -> faults--; live = false }
    /* The TTL (24h at least, renewed by every claim) is far longer than
       any holder runs (a Lambda, 15 minutes at most): a record expires
       only when nobody is running. */
    :: atomic { status != NONE && !expired && ttl_left > 0 && holding == 0 && !inflight -> expired = true; ttl_left-- }
    :: atomic { expired -> status = NONE; expired = false;
                effects = 0; first_token = 0; charges = 0; provider_done = false; aged = true }
    od
}

/* Who asks. With faults, three clients are past what spin can search in a
   test's time, so each fault run has two: the request and its duplicate
   (the race, the takeover, the fence), or the request and another one
   under its key (whose key it is, the orphan). Without faults, all three. */
init {
    atomic {
#if defined(NOFAULTS)
        run Req(0, A); run Req(1, A); run Req(2, B)
#elif defined(OTHER)
        run Req(0, A); run Req(2, B)
#else
        run Req(0, A); run Req(1, A)
#endif
    }
}
