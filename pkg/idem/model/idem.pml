/*
 * The idempotency protocol of pkg/idem, as a Promela model: Store.Do (Req),
 * Store.DoAtomic (AReq), the operator's Lapse and Delete (Operator) and the
 * execution environment's response cache. DESIGN.md ("What the model
 * proves") says what it proves and what it assumes; this comment says how.
 *
 * One (scope, key) record. Requests: fingerprint A (a request, its retry
 * and its duplicate) and B (another request under the same key). Each
 * client retries what did not end with an answer, after the lease it was
 * told about is over (Retry-After).
 *
 * Each DynamoDB call is one atomic step, as DynamoDB documents conditional
 * writes and transactions to be, and every call (the claim, a takeover, the
 * commit, the lapse, the hand-back, the operator's) may land and lose its
 * answer: the SDK then sends the same call again, which sees what the first
 * one wrote, or gives up, which leaves the outcome unknown. A claim or a
 * commit may also be sent and given up on before it lands: it lands later
 * (after the call that settled it, say), or never. A settling call (the
 * lapse, the hand-back) may never land at all: every send met the
 * transaction still in flight, or was throttled, until settleFor ran out.
 * The client picks a lease token before sending, as rand.Text() does, so a
 * resend carries the same token.
 *
 * Faults, bounded so that retries can end: a crash (after the claim, after
 * the provider call, with the commit landed or in flight), a work error, an
 * SDK that gives up, a call sent and never answered, a settling call that
 * never lands, and a clock that lets a running holder's lease run out (a
 * slow holder) each cost one of FAULTS; a crashed holder's lease runs out for
 * free. A lost answer costs one of LOST. The record may expire (TTL) once,
 * and be deleted late after that.
 *
 * Mirrors, and must change with:
 *   decide       decide.go next (what the record last seen means)
 *   claim_as     claim.go condFresh, condTakeover (a CAS on the lapsed token),
 *                and claim's reading of its own token as won
 *   handback     claim.go handBack (the claimed record put already lapsed,
 *                under the claim's condition or over the claim itself)
 *   commit_as    lease.go condLease (the fence: in progress AND my token)
 *   settle       complete.go recordFailed, lease.go settle and resolve
 *   lapse_as     lease.go lapse (lease_until = 0, token replaced, fenced)
 *   acommit_as   atomic.go atomicCompletion (completed, under the claim's
 *                condition), settleAtomic
 *   Operator     admin.go Lapse, Delete (condCompletedAsRead)
 *   cache        decide.go cached, answer, finish; cache.go
 *
 * The guards of the DynamoDB writes' conditions are marked
 * "guard NAME": conditions.txt holds them and the code's
 * ConditionExpressions to one table, term by term (pkg/idem's
 * TestConditionsModelledAreTheTable and TestConditionsSentAreTheTable).
 *
 * Configurations (the init block at the end): the request and its
 * duplicate (default); OTHER, the request and another under its key;
 * NOFAULTS, three requests with lost answers only; ATOMIC, Do and DoAtomic
 * of one request (a function switching paths); ATOMIC with OTHER, DoAtomic
 * and another request's Do; OPERATOR, with OTHER or not, an operator
 * beside; CACHE, with OTHER or not, the requests in one execution
 * environment sharing its cache.
 *
 * Negative controls, each a compile-time switch that breaks one rule:
 *   NO_FENCE           the commit ignores the lease token
 *   NO_FP_CHECK        a takeover ignores the fingerprint (next and condTakeover)
 *   PER_ATTEMPT_KEY    the provider key is new per attempt
 *   RELEASE_DELETE     a failure deletes the record instead of lapsing it
 *   LAPSE_KEEPS_TOKEN  the lapse keeps the lease token
 *   NO_OWN_TOKEN       a claim does not read its own token as won
 *   SLOW_EXPIRY        the record may expire under a running holder (the
 *                      TTL assumption dropped: New's Lease <= TTL/2)
 *   HANDBACK_AS_LAPSE  an unknown claim is handed back by a lapse (a late
 *                      claim lands after it)
 *   ATOMIC_SETTLE_LAPSE DoAtomic settles by lapse, which finds nothing
 *   ATOMIC_NO_EXPIRY   DoAtomic's claim condition without its expiry term
 *   NO_DELETE_COND     the operator's delete without its condition
 *   CACHE_EARLY        the cache is filled before the commit's answer
 */

#define NONE    0
#define INPROG  1
#define DONE    2

#define A 1
#define B 2

#ifdef NO_FP_CHECK
#define SAME_REQUEST(fp) true
#define SAME_FP(fp) true
#else
#define SAME_REQUEST(fp) (fp == myfp)
#define SAME_FP(fp) (rfp == fp)
#endif

/* The late faults: a claim in flight, a settling call that never lands, a
   crash with the commit landed or in flight. Each costs one of FAULTS. */
#define LATE_FAULTS (faults > 0)

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
bool replaced[NTOK];     /* a lease that a claim, takeover, lapse or hand-back replaced */
byte lapsed_by[NTOK];    /* a lapsed token -> the lease it lapsed */
bool inflight;           /* a commit sent, given up on, not landed yet */
bool inflight_atomic;    /* ... DoAtomic's, under the claim's condition */
bool inflight_tkok;
byte inflight_tok, inflight_fp, inflight_seen;
bool cinflight;          /* a claim sent, given up on, not landed yet */
bool cin_tkok;
byte cin_tok, cin_fp, cin_seen;
bool running[NTOK];      /* a lease whose holder is still running */
byte holding;            /* how many holders are running */
#define HOLD   running[tok] = true; holding++
#define UNHOLD running[tok] = false; holding--
byte life = 1;           /* the record's life: a new one after TTL or a delete */
byte tok_life[NTOK];     /* the life a lease was won in */
byte committed_fp[NTOK]; /* a lease whose commit landed -> whose response */
bool told_failed[NTOK];  /* a client was told the commit of this lease failed, for good */
byte effects;            /* business writes committed in this record's life */
byte first_token;        /* the lease whose commit made the stored response */
byte first_fp;           /* the request the record's life began with */
byte charges;            /* provider charges in this record's life */
bool provider_done;      /* the provider has a result for the downstream key */
byte provider_fp;        /* ... for this request */
byte ttl_left = 1;

/* The execution environment's cache (CACHE): one entry, for the key. */
bool c_ok;
byte c_fp, c_resp_fp, c_tok;   /* the entry: whose key, whose response, under which lease */
byte ttl_life;                 /* the life the TTL ended: its entries have expired too */

/* Outcomes. */
#define EXECUTED 1
#define REPLAYED 2
#define CONFLICT 3   /* 409: in progress, contention past MAXCLAIMS, a transaction in flight */
#define MISMATCH 4   /* 422 */
#define FENCED   5   /* 409 after a takeover: nothing committed */
#define FAILED   6   /* 5xx: the work or a call failed; nothing committed, and never will be */
#define CRASHED  7
#define UNKNOWN  8   /* 5xx: the outcome unknown (a settling call went unanswered) */

byte outcome[NREQ];
byte answer_fp[NREQ];    /* whose response a request was answered with */

/* A new life of the key: what was committed or charged in the last one is
   forgotten, by the record and by the provider's derived key. */
inline new_life() {
    effects = 0; first_token = 0; charges = 0; provider_done = false; life++
}

#define ANSWER_RECORD \
    a_status = status; a_fp = rfp; a_token = rtoken; a_live = live; \
    a_expired = expired; a_resp_fp = resp_fp; a_resp_token = resp_token; \
    a_first = first_token

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

/* The claim's conditional PutItem (fresh, or a takeover of tkseen when
   tkok), carrying lease t for request fp; ReturnValuesOnConditionCheckFailure
   = ALL_OLD into a_*. */
inline claim_as(t, fp, tkok, tkseen) {
    atomic {
        if
        /* guard claim_as: condFresh */
        :: (status == NONE || expired) ->
            /* (a resend over its own first send replaces nothing) */
            if :: status == INPROG && rtoken != t -> replaced[rtoken] = true :: else -> skip fi;
            if :: expired -> new_life() :: else -> skip fi;
            status = INPROG; rfp = fp; rtoken = t; live = true; expired = false;
            first_fp = fp; tok_life[t] = life; a_won = true
        /* guard claim_as: condTakeover's own disjunct */
        :: (tkok && status == INPROG && rtoken == tkseen && !live && SAME_FP(fp) && !expired) ->
            replaced[rtoken] = true;
            rfp = fp; rtoken = t; live = true; tok_life[t] = life; a_won = true
        :: else -> ANSWER_RECORD; a_won = false
        fi
    }
}

/* What a commit of lease t for request fp leaves: the completed record, the
   business writes. */
inline committed(t, fp) {
    assert(!told_failed[t]);           /* an answer "failed" is never followed by its commit */
    /* no orphan: once a request's work had its outside effect, the key is
       completed with that request's response only */
    assert(!provider_done || provider_fp == fp);
    status = DONE; rfp = fp; rtoken = t; live = false;
    resp_fp = fp; resp_token = t; committed_fp[t] = fp;
    effects++;
    assert(effects <= 1);              /* business writes at most once per record's life */
    if :: first_token == 0 -> first_token = t :: else -> skip fi;
    a_won = true
}

/* Do's commit of lease t for request fp: business writes and the completed
   record, fenced on the lease. */
inline commit_as(t, fp) {
    atomic {
        if
        /* guard commit_as: condLease */
        :: (status == INPROG &&
#ifndef NO_FENCE
            rtoken == t &&
#endif
            true) ->
            assert(!replaced[t]);      /* a fenced or lapsed lease never commits */
            assert(fp == first_fp);    /* a takeover never changes whose key it is */
            committed(t, fp)
        :: else -> ANSWER_RECORD; a_won = false
        fi
    }
}

#ifdef ATOMIC_NO_EXPIRY
#define ATOMIC_FRESH (status == NONE)
#else
#define ATOMIC_FRESH (status == NONE || expired)
#endif

/* DoAtomic's commit: the record put straight as completed under the claim's
   condition (fresh, or a takeover of a lapsed lease of Do's), with the
   business writes, in one transaction. No lease, no fence. */
inline acommit_as(t, fp, tkok, tkseen) {
    atomic {
        if
        /* guard acommit_as: condFresh */
        :: ATOMIC_FRESH ->
            if :: status == INPROG -> replaced[rtoken] = true :: else -> skip fi;
            if :: expired -> new_life() :: else -> skip fi;
            expired = false; first_fp = fp; tok_life[t] = life;
            committed(t, fp)
        /* guard acommit_as: condTakeover's own disjunct */
        :: (tkok && status == INPROG && rtoken == tkseen && !live && SAME_FP(fp) && !expired) ->
            replaced[rtoken] = true; tok_life[t] = life;
            committed(t, fp)
        :: else ->
            /* a record next reads as expired never stops a claim (else
               409s until TTL deletes it, days later) */
            assert(!expired);
            ANSWER_RECORD; a_won = false
        fi
    }
}

/* The lapse of lease t: lease_until = 0, and the token replaced by its
   lapsed form, fenced on the token. A resend finds its own lapse. */
inline lapse_as(t) {
    atomic {
        if
        /* guard lapse_as: condLease */
        :: (status == INPROG && rtoken == t) ->
#ifdef RELEASE_DELETE
            status = NONE;
#else
            live = false; replaced[t] = true;
#ifndef LAPSE_KEEPS_TOKEN
            lapsed_by[next_token] = t; rtoken = next_token; next_token++;
#endif
#endif
            a_won = true
        :: (status == INPROG && rtoken != t && lapsed_by[rtoken] == t) -> a_won = true
        :: else -> ANSWER_RECORD; a_won = false
        fi
    }
}

/* The lapse, as sent: it lands and its answer comes back (or is lost, the
   SDK resending), or it never lands (resolve's bound ran out). lapse_lost:
   the caller has no answer. */
inline lapse(t) {
    if
    :: lapse_as(t); LOSE_ANSWER(lapse_as(t)); lapse_lost = gaveup; gaveup = false
    :: atomic { LATE_FAULTS -> faults--; lapse_lost = true; a_won = false }
    fi
}

/* The hand-back of claim t (request fp, takeover of tkseen when tkok): the
   claimed record put already lapsed, under the claim's own condition or
   over the claim itself, so that no send of the claim lands after it. */
inline handback_as(t, fp, tkok, tkseen) {
    atomic {
        if
        /* guard handback_as: the claim's condition, fresh */
        :: (status == NONE || expired) ->
            if :: status == INPROG -> replaced[rtoken] = true :: else -> skip fi;
            if :: expired -> new_life() :: else -> skip fi;
            first_fp = fp;
            status = INPROG; rfp = fp; expired = false; live = false; replaced[t] = true;
            lapsed_by[next_token] = t; rtoken = next_token; next_token++; a_won = true
        /* guard handback_as: over the claim itself, or the takeover's own disjunct */
        :: (status == INPROG && !expired && (rtoken == t || (tkok && rtoken == tkseen && !live && SAME_FP(fp)))) ->
            replaced[rtoken] = true;
            status = INPROG; rfp = fp; live = false; replaced[t] = true;
            lapsed_by[next_token] = t; rtoken = next_token; next_token++; a_won = true
        :: (status == INPROG && rtoken != t && lapsed_by[rtoken] == t) -> a_won = true
        :: else -> ANSWER_RECORD; a_won = false
        fi
    }
}

inline handback(t, fp, tkok, tkseen) {
    if
    :: handback_as(t, fp, tkok, tkseen); LOSE_ANSWER(handback_as(t, fp, tkok, tkseen));
        lapse_lost = gaveup; gaveup = false
    :: atomic { LATE_FAULTS -> faults--; lapse_lost = true; a_won = false }
    fi
}

#define SEE_ANSWER \
    saw = true; s_status = a_status; s_fp = a_fp; s_token = a_token; s_live = a_live; \
    s_expired = a_expired; s_resp_fp = a_resp_fp; s_resp_token = a_resp_token; s_first = a_first

/* The cache, consulted before the claim (decide.go cached): a replay of
   the entry's response, or the 422 of another request's key. */
#ifdef CACHE
#define CONSULT_CACHE \
    if \
    :: d_step { c_ok && tok_life[c_tok] != ttl_life && c_fp == myfp -> \
        /* a cached replay answers only the response committed to this request */ \
        assert(committed_fp[c_tok] == myfp && c_resp_fp == myfp); \
        answer_fp[me] = c_resp_fp; outcome[me] = REPLAYED }; goto end \
    :: d_step { c_ok && tok_life[c_tok] != ttl_life && c_fp != myfp -> \
        /* a cached 422 only to another request than the key's */ \
        assert(committed_fp[c_tok] != 0 && committed_fp[c_tok] != myfp); \
        outcome[me] = MISMATCH }; goto end \
    :: else -> skip \
    fi
#define FILL_CACHE(fp, rfp_, t) d_step { c_ok = true; c_fp = fp; c_resp_fp = rfp_; c_tok = t }
#else
#define CONSULT_CACHE skip
#define FILL_CACHE(fp, rfp_, t) skip
#endif

proctype Req(byte me; byte myfp) {
    byte tok, claims, handed;
    byte effect_life;    /* the record's life when this request's work last had its outside effect */
    bool saw, gaveup, lapse_lost, a_won, tkok;
    byte s_status, s_fp, s_token, s_resp_fp, s_resp_token, s_first;
    bool s_live, s_expired;
    byte a_status, a_fp, a_token, a_resp_fp, a_resp_token, a_first;
    bool a_live, a_expired;

attempt:
    skip;
    CONSULT_CACHE;
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
        FILL_CACHE(s_fp, s_resp_fp, s_resp_token);
        answer_fp[me] = s_resp_fp; outcome[me] = REPLAYED; goto end
    :: (saw && s_status == INPROG && !s_expired && SAME_REQUEST(s_fp) && s_live) ->
        /* stepBusy. Never this request's own claim: not this attempt's (a
           claim that finds its own token has won), nor one it handed back
           (no claim lands after its hand-back). */
        assert(tok == 0 || s_token != tok);
        assert(handed == 0 || s_token != handed);
        outcome[me] = CONFLICT; goto retry
    :: (saw && s_status == INPROG && !s_expired && SAME_REQUEST(s_fp) && !s_live) ->
        goto claim                                                       /* stepTakeover */
    fi;

claim:
    if
    :: claims == MAXCLAIMS -> outcome[me] = CONFLICT; goto retry
    :: else -> claims++
    fi;
    atomic { tok = next_token; next_token++; HOLD; tkok = (saw && s_status == INPROG) };
    if
    :: claim_as(tok, myfp, tkok, s_token); LOSE_ANSWER(claim_as(tok, myfp, tkok, s_token))
    :: atomic { LATE_FAULTS -> faults--; gaveup = true;               /* sent, no answer */
                cinflight = true; cin_tok = tok; cin_fp = myfp; cin_tkok = tkok; cin_seen = s_token }
    fi;
    if
    :: gaveup ->
        /* unknown: hand the claim back */
        gaveup = false;
#ifdef HANDBACK_AS_LAPSE
        lapse(tok);
#else
        handback(tok, myfp, tkok, s_token);
#endif
        UNHOLD;
        if
        :: lapse_lost -> outcome[me] = UNKNOWN; goto retry
#ifdef HANDBACK_AS_LAPSE
        :: !lapse_lost -> handed = tok;     /* "claim outcome unknown, lease lapsed" */
#else
        :: (!lapse_lost && a_won) -> handed = tok;
#endif
            /* a claim whose resends met a transaction in flight is 409 */
            if :: inflight -> outcome[me] = CONFLICT :: else -> outcome[me] = FAILED fi;
            goto retry
#ifndef HANDBACK_AS_LAPSE
        :: (!lapse_lost && !a_won) -> d_step { SEE_ANSWER }; goto decide  /* another's record */
#endif
        fi
    :: else -> skip
    fi;
    d_step { SEE_ANSWER };
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
        /* a holder's outside effect lands in its own record's life */
        assert(tok_life[tok] == life);
#ifdef PER_ATTEMPT_KEY
        charges++
#else
        if
        :: !provider_done -> provider_done = true; provider_fp = myfp; charges++
        :: provider_done -> skip
        fi
#endif
        ;
        if :: provider_fp == myfp -> effect_life = life :: else -> skip fi
    };
    assert(charges <= 1);                    /* one charge per record's life */
#ifndef NOFAULTS
    if
    :: atomic { faults > 0 -> faults-- }; UNHOLD; outcome[me] = CRASHED; goto retry
    :: atomic { faults > 0 -> faults-- }; lapse(tok); UNHOLD; outcome[me] = FAILED; goto retry
    :: skip
    fi;
#endif
#ifdef CACHE_EARLY
    FILL_CACHE(myfp, myfp, tok);
#endif
    if
    :: commit_as(tok, myfp); LOSE_ANSWER(commit_as(tok, myfp))
    :: atomic { faults > 0 -> faults--; gaveup = true;     /* sent, no answer */
                inflight = true; inflight_atomic = false; inflight_tok = tok; inflight_fp = myfp }
    /* killed (a Lambda at its deadline) with the commit landed, or in
       flight: no settling */
    :: atomic { LATE_FAULTS -> faults--; commit_as(tok, myfp) }; UNHOLD; outcome[me] = CRASHED; goto retry
    :: atomic { LATE_FAULTS -> faults--;
                inflight = true; inflight_atomic = false; inflight_tok = tok; inflight_fp = myfp };
        UNHOLD; outcome[me] = CRASHED; goto retry
    fi;
    UNHOLD;
    if
    :: gaveup ->
        /* settle: the lapse decides an unknown commit */
        gaveup = false;
        lapse(tok);
        if
        :: lapse_lost -> outcome[me] = UNKNOWN; goto retry               /* no answer: it may still land */
        :: (!lapse_lost && a_won) ->                                     /* not landed, and now never */
            told_failed[tok] = true; outcome[me] = FAILED; goto retry
        :: (!lapse_lost && !a_won && a_status == DONE && a_token == tok) -> skip   /* mine */
        :: (!lapse_lost && !a_won && a_status == NONE) -> outcome[me] = UNKNOWN; goto retry  /* gone */
        :: (!lapse_lost && !a_won && a_status != NONE && !(a_status == DONE && a_token == tok)) ->
            outcome[me] = FENCED; goto retry
        fi
    :: (!gaveup && a_won) -> skip
    :: (!gaveup && !a_won && a_status == DONE && a_token == tok) -> skip /* recordFailed: mine */
    :: (!gaveup && !a_won && !(a_status == DONE && a_token == tok)) -> outcome[me] = FENCED; goto retry
    fi;
#ifndef CACHE_EARLY
    FILL_CACHE(myfp, myfp, tok);
#endif
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
       effect in the record's present life (per life: a record that expired
       since may forget it) ends with its completed response, never a 422.
       (That every request ends at all is checked too: a request that
       could never end is an invalid end state.) */
    assert(effect_life != life || !(provider_done && provider_fp == myfp) ||
           outcome[me] == EXECUTED || outcome[me] == REPLAYED)
}

/* DoAtomic: the work only computes (no outside effect), then one
   transaction puts the record completed under the claim's condition. */
proctype AReq(byte me; byte myfp) {
    byte tok, claims;
    bool saw, gaveup, lapse_lost, a_won, tkok;
    byte s_status, s_fp, s_token, s_resp_fp, s_resp_token, s_first;
    bool s_live, s_expired;
    byte a_status, a_fp, a_token, a_resp_fp, a_resp_token, a_first;
    bool a_live, a_expired;

attempt:
    skip;
    CONSULT_CACHE;
    d_step { claims = 0; saw = false; tok = 0; gaveup = false };
decide:
    if
    :: (!saw || s_status == NONE || s_expired) -> goto claim
    :: (saw && s_status != NONE && !s_expired && !SAME_REQUEST(s_fp)) -> outcome[me] = MISMATCH; goto end
    :: (saw && s_status == DONE && !s_expired && SAME_REQUEST(s_fp)) ->
        assert(s_resp_fp == myfp);
        assert(s_resp_token == s_first);
        FILL_CACHE(s_fp, s_resp_fp, s_resp_token);
        answer_fp[me] = s_resp_fp; outcome[me] = REPLAYED; goto end
    :: (saw && s_status == INPROG && !s_expired && SAME_REQUEST(s_fp) && s_live) ->
        outcome[me] = CONFLICT; goto retry                       /* Do's live lease */
    :: (saw && s_status == INPROG && !s_expired && SAME_REQUEST(s_fp) && !s_live) -> goto claim
    fi;
claim:
    if
    :: claims == MAXCLAIMS -> outcome[me] = CONFLICT; goto retry
    :: else -> claims++
    fi;
    atomic { tok = next_token; next_token++; tkok = (saw && s_status == INPROG) };
    if
    :: acommit_as(tok, myfp, tkok, s_token);
        /* a resend carries the same ClientRequestToken (a put: reads its
           own record): the first send's success comes back */
        LOSE_ANSWER(atomic { if :: status == DONE && rtoken == tok -> a_won = true
                             :: else -> acommit_as(tok, myfp, tkok, s_token) fi })
    :: atomic { faults > 0 -> faults--; gaveup = true;
                inflight = true; inflight_atomic = true; inflight_tok = tok; inflight_fp = myfp;
                inflight_tkok = tkok; inflight_seen = s_token }
    fi;
    if
    :: gaveup ->
        gaveup = false;
#ifdef ATOMIC_SETTLE_LAPSE
        /* settle by the lapse: a completed record is never in progress */
        lapse(tok);
        if
        :: lapse_lost -> outcome[me] = UNKNOWN; goto retry
        :: (!lapse_lost && !a_won && a_status == DONE && a_token == tok) -> goto executed
        :: (!lapse_lost && !a_won && a_status == NONE) ->
            /* "outcome unknown, the record is gone" */
            assert(lapse_lost);   /* an unknown answer only where the settling call went unanswered */
            outcome[me] = UNKNOWN; goto retry
        :: (!lapse_lost && !a_won && a_status != NONE && !(a_status == DONE && a_token == tok)) ->
            d_step { SEE_ANSWER }; goto decide
        fi
#else
        handback(tok, myfp, tkok, s_token);
        if
        :: lapse_lost -> outcome[me] = UNKNOWN; goto retry
        :: (!lapse_lost && a_won) -> told_failed[tok] = true; outcome[me] = FAILED; goto retry
        :: (!lapse_lost && !a_won && a_status == DONE && a_token == tok) -> goto executed
        :: (!lapse_lost && !a_won && !(a_status == DONE && a_token == tok)) ->
            d_step { SEE_ANSWER }; goto decide                          /* lost */
        fi
#endif
    :: (!gaveup && a_won) -> goto executed
    :: (!gaveup && !a_won) -> d_step { SEE_ANSWER }; goto decide        /* the record that beat it */
    fi;
executed:
    skip;
    FILL_CACHE(myfp, myfp, tok);
    answer_fp[me] = myfp; outcome[me] = EXECUTED; goto end;
retry:
    !(status == INPROG && live);
    goto attempt;
end:
    assert(outcome[me] != 0);
    assert(answer_fp[me] == 0 || answer_fp[me] == myfp);
    assert(outcome[me] == EXECUTED || outcome[me] == REPLAYED || outcome[me] == MISMATCH)
}

/* The operator (idemctl, another process): Inspect, then Lapse a key in
   progress or Delete a completed one, acting on the record as read (its
   lease token); its calls may land and lose their answers too. */
proctype Operator() {
    byte t, st;
    bool gaveup, a_won;
    byte a_status, a_fp, a_token, a_resp_fp, a_resp_token, a_first;
    bool a_live, a_expired;
end:
    atomic { status != NONE && !expired -> t = rtoken; st = status };
    /* It acts only on a key none of whose holders or calls may still run
       (Delete's doc: completed longer ago than the function's timeout), as
       the TTL does: a claim in flight would land on the deleted key. */
    (holding == 0 && !inflight && !cinflight);
    if
    :: st == INPROG -> lapse_as(t); LOSE_ANSWER(lapse_as(t))
    :: st == DONE ->
        /* the delete, fenced on the record as read; a resend carries the
           same ClientRequestToken */
        atomic {
            if
#ifdef NO_DELETE_COND
            :: status != NONE ->
#else
            /* guard delete: condCompletedAsRead */
            :: (status == DONE && rtoken == t) ->
#endif
                /* a delete removes only the completed record it read: the
                   work may run again only after it */
                assert(status == DONE && rtoken == t);
                status = NONE; expired = false; new_life()
            :: else -> skip
            fi
        }
    :: skip
    fi
}

/* Time: a lease runs out (free once its holder is gone, a fault while it
   runs); a record may expire once and be deleted; a call in flight lands
   late, or never. */
active proctype Clock() {
    bool a_won;
    byte a_status, a_fp, a_token, a_resp_fp, a_resp_token, a_first;
    bool a_live, a_expired;
end:
    do
    :: atomic { inflight && !inflight_atomic -> commit_as(inflight_tok, inflight_fp); inflight = false }
    :: atomic { inflight && inflight_atomic ->
                acommit_as(inflight_tok, inflight_fp, inflight_tkok, inflight_seen); inflight = false }
    :: atomic { inflight -> inflight = false }     /* it never lands */
    :: atomic { cinflight -> claim_as(cin_tok, cin_fp, cin_tkok, cin_seen); cinflight = false }
    :: atomic { cinflight -> cinflight = false }
    :: atomic { status == INPROG && live && !running[rtoken] -> live = false }
    :: atomic { status == INPROG && live && running[rtoken] && faults > 0 -> faults--; live = false }
    /* The TTL (24h at least, renewed by every claim and commit) outlasts
       any holder: New wants Lease <= TTL/2, a Lambda runs 15 minutes at
       most. So a record expires only when no holder of its life runs and no
       call of one is in flight; SLOW_EXPIRY drops that. The cache's entries
       of that life expire with it (an entry is never kept past the
       record's expires_at, even one put after it). */
    :: atomic { status != NONE && !expired && ttl_left > 0 &&
#ifndef SLOW_EXPIRY
                holding == 0 && !inflight && !cinflight &&
#endif
                true -> expired = true; ttl_left--; ttl_life = life }
    :: atomic { expired -> status = NONE; expired = false; new_life() }
    od
}

init {
    atomic {
#if defined(ATOMIC) && defined(OTHER)
        run AReq(0, A); run Req(2, B)
#elif defined(ATOMIC)
        run Req(0, A); run AReq(1, A)
#elif defined(NOFAULTS) && !defined(OPERATOR)
        run Req(0, A); run Req(1, A); run Req(2, B)
#elif defined(OTHER)
        run Req(0, A); run Req(2, B)
#else
        run Req(0, A); run Req(1, A)
#endif
        ;
#ifdef OPERATOR
        run Operator()
#endif
    }
}
