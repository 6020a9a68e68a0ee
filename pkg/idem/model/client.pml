/*
 * The client half of one logical operation, as a Promela model: idemclient's
 * Client.Do (policy.go judge, tellsOutcome and notSent; transport.go
 * RoundTrip, giveUp and refused), the attempts it makes under one key, what
 * each attempt's sends meet on the way, and the verdict it hands the caller:
 * the answer, an unknown outcome with the key, or "nothing can have
 * happened". DESIGN.md ("What the model proves") says what it proves and
 * what it assumes.
 *
 * The server is the one idem.pml proves (not modelled again): a key bound to
 * one request for the record's life, its work run to one committed
 * response (of any status: a 2xx, or a 4xx of the handler's own), every
 * later write of the request answered with that response replayed (or 409
 * while a holder runs, or 5xx after a failure, the key still bound and
 * taken over by the next write), and a 422 idempotency_key_reused only to
 * another request: here, a key the caller chose that another request took
 * first (taken, chosen at the start), under which this request never acts.
 *
 * One attempt is what Transport sends through its Base (an http.Transport)
 * for one RoundTrip: one send, or more when the Base resends by itself. A
 * send fails to connect (a dial error: nothing written), or writes the
 * request, which then meets a layer that never reads the key (an
 * authorizer's 401 or 403, a sign-in redirect 302, a throttle's 429, a
 * proxy's 502 or 503 before it forwards, a 307 or 308) or reaches the
 * server; the server's answer comes back, or a proxy's 502 or 504 comes
 * instead, or the connection breaks before any answer. Go's http.Transport
 * resends a request that carries Idempotency-Key by itself after a reused
 * connection broke once it was written: that resend is a send of the same
 * attempt, and may fail to dial, or meet a layer, or the server again.
 *
 * The rule the client keeps: an attempt that wrote its request (any send
 * of it, the transport's own resend included) and lost the answer to a
 * write may have acted, whatever came last; once an attempt may have acted,
 * only a 2xx, a replay, a 422 idempotency_key_reused or a 307/308 (followed
 * with the same method and key, the operation going on) tells the outcome;
 * anything else ends it as an unknown outcome with the key.
 *
 * Bounds: MAXATT attempts per RoundTrip (Options.MaxAttempts, its
 * default), RESENDS resends by the transport per attempt, REDIRECTS
 * redirects followed per operation (http.Client's ten, then it fails), and
 * the retries may end early after any attempt (the context's deadline, a
 * Retry-After over MaxRetryAfter).
 *
 * Mirrors, and must change with:
 *   mayact, the verdict after each attempt
 *                policy.go judge (what is retried, what may have acted),
 *                notSent (a dial error: never sent) and the attempt's writes
 *                as httptrace reports them; tellsOutcome (what tells the
 *                outcome after an attempt that may have acted)
 *   R_307        client.go Client.Do: the key set before http.Client sees
 *                the request, so a followed 307/308 carries it
 *   ended        transport.go giveUp: an unknown outcome once an attempt
 *                may have acted; else the last 429, or "nothing can have
 *                happened"
 *
 * Negative controls, each a compile-time switch that breaks one rule:
 *   DIAL_AS_UNSENT     an attempt whose last send failed to dial counts as
 *                      never sent (the transport's earlier write forgotten)
 *   RESEND_UNCOUNTED   an attempt that got an answer is judged by that
 *                      answer alone (a write the transport resent forgotten)
 *   REDIRECT_TELLS     a 301/302/303 after an attempt that may have acted
 *                      is taken as the outcome (followed as a GET)
 *   FOLLOW_FORGETS     a followed 307/308 starts the operation afresh, what
 *                      the attempts before it may have done forgotten
 */

#ifndef MAXATT
#define MAXATT 8     /* Options.MaxAttempts' default */
#endif
#ifndef RESENDS
#define RESENDS 4    /* http.Transport's own resends of one attempt, bounded */
#endif
#ifndef REDIRECTS
#define REDIRECTS 10 /* redirects http.Client follows before it fails */
#endif

/* The server's record of the key. */
#define NONE   0
#define RUN    1   /* in progress under a live lease: its holder runs, or died and its lease has not run out */
#define LAPSED 2   /* in progress, lease over: the request's next write takes it over */
#define DONE   3   /* completed: the committed response */

/* What one send comes to. */
#define R_DIAL   1   /* error: the connection was never made, nothing written */
#define R_LOST   2   /* error: written, then the connection broke before any answer */
#define R_2XX    3   /* the server's 2xx: the response its commit stored */
#define R_REPLAY 4   /* the server's replay (Idempotent-Replayed: true) of the committed response */
#define R_409    5   /* 409 request_in_progress */
#define R_422    6   /* 422 idempotency_key_reused */
#define R_5XX    7   /* a 5xx: the server's, or a proxy's */
#define R_429    8   /* 429: a throttle, before the server */
#define R_401    9   /* 401 or 403 from an authorizer, or another refusal that does not tell */
#define R_302    10  /* 301, 302 or 303: a sign-in page's redirect, followed as a GET */
#define R_307    11  /* 307 or 308: followed with the same method, body and key */
#define R_4XXC   12  /* the server's committed response of a 4xx status, fresh (a 402 declined, a 409 of its own) */

/* The verdicts. */
#define V_ANSWER  1
#define V_UNKNOWN 2
#define V_NOTHING 3

/* What an answer handed back is. */
#define K_COMMITTED 1   /* the server's committed response: fresh, or a replay */
#define K_REUSED    2   /* the 422: the key is another request's */
#define K_REFUSAL   3   /* anything else handed back: a layer's refusal, a sign-in page, a 429 */

byte st = NONE;
bool taken;          /* the key is bound to another request */
bool acted;          /* ghost: a write of this request reached the server and its work ran */
byte verdict, kind;

/* The server, as idem.pml proves it: one atomic step per write that
   reaches it. */
inline server() {
    atomic {
        if
        :: taken -> res = R_422
        :: !taken && st == DONE -> res = R_REPLAY
        :: !taken && st == RUN -> res = R_409
        :: !taken && (st == NONE || st == LAPSED) ->
            acted = true;
            if
            :: st = DONE; res = R_2XX          /* committed */
            :: st = DONE; res = R_4XXC         /* committed, a refusal of the handler's */
            :: st = DONE; res = R_5XX          /* committed, its answer unknown to the server (settle unanswered) */
            :: st = LAPSED; res = R_5XX        /* the work failed: lapsed, nothing committed */
            :: st = RUN; res = R_LOST          /* the holder died or runs on: no answer */
            fi
        :: res = R_5XX                         /* refused before the claim (its table unreachable) */
        fi
    }
}

/* One send by the Base: it fails to dial, or writes the request. */
inline send() {
    if
    :: res = R_DIAL
    :: wrote++;
        if
        /* a layer that never reads the key answers; nothing reaches the server */
        :: res = R_401
        :: res = R_302
        :: res = R_429
        :: res = R_5XX
        :: res = R_307
        :: server();
            if
            :: skip
            :: res = R_5XX                     /* a proxy's 502/504 instead of the answer */
            :: res = R_LOST                    /* the connection broke before the answer */
            fi
        fi
    fi
}

/* A holder that died: its lease runs out. */
active proctype Clock() {
end:
    do
    :: atomic { st == RUN -> st = LAPSED }
    od
}

active proctype Op() {
    byte n;              /* attempts sent in this RoundTrip */
    byte res, wrote, resends;
    bool mayact;         /* op.acted: an attempt may have acted */
    byte redirects = REDIRECTS;

    if :: taken = true :: skip fi;
attempt:
    n++; wrote = 0; resends = RESENDS;
    send();
    do
    :: res == R_LOST && resends > 0 -> resends--; send()     /* http.Transport's own resend */
    :: else -> break
    od;
    /* Did this attempt write a request whose answer it lost? Every send but
       the last one did (that is why it was resent), and the last did if it
       wrote and ended in an error. */
#if defined(DIAL_AS_UNSENT)
    mayact = mayact || (res == R_LOST) || wrote > 1 && res != R_DIAL;
#elif defined(RESEND_UNCOUNTED)
    mayact = mayact || (res == R_LOST || res == R_DIAL) && wrote > 0;
#else
    mayact = mayact || (res == R_LOST || res == R_DIAL) && wrote > 0 || wrote > 1;
#endif
    if
    :: res == R_DIAL || res == R_LOST -> goto retry
    :: res == R_2XX || res == R_REPLAY -> kind = K_COMMITTED; goto answer
    :: res == R_422 -> kind = K_REUSED; goto answer
    :: res == R_409 || res == R_5XX -> mayact = true; goto retry
    :: res == R_429 -> goto retry
    :: res == R_307 ->
        /* http.Client follows it: the same method, body and key, the
           operation going on */
        if
        :: redirects > 0 -> redirects--;
            n = 0;                             /* a new RoundTrip: MaxAttempts of its own */
#ifdef FOLLOW_FORGETS
            mayact = false;
#endif
            goto attempt
        :: else -> goto ended                  /* too many redirects */
        fi
    :: res == R_401 || res == R_302 || res == R_4XXC ->
#ifdef REDIRECT_TELLS
        if :: res == R_302 -> kind = K_REFUSAL; goto answer :: else -> skip fi;
#endif
        /* the client cannot tell the server's own 4xx from a layer's */
        if
        :: mayact -> goto unknown              /* does not tell: refused */
        :: else -> if :: res == R_4XXC -> kind = K_COMMITTED :: else -> kind = K_REFUSAL fi; goto answer
        fi
    fi;
retry:
    if
    :: n < MAXATT -> goto attempt
    :: skip                                    /* the deadline, a Retry-After too long */
    fi;
ended:
    /* giveUp: no answer that tells */
    if
    :: mayact -> goto unknown
    :: !mayact && res == R_429 -> kind = K_REFUSAL; goto answer   /* the 429 handed back */
    :: else -> verdict = V_NOTHING; goto end
    fi;
answer:
    verdict = V_ANSWER; goto end;
unknown:
    verdict = V_UNKNOWN;
end:
    /* "nothing can have happened" only when no write acted */
    assert(verdict != V_NOTHING || !acted);
    /* an answer handed back is the committed response, or else came while
       no write acted (a refusal, the 422 of another request's key) */
    assert(verdict != V_ANSWER || kind == K_COMMITTED && st == DONE || kind != K_COMMITTED && !acted)
}
