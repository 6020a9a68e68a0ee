/*
 * The queue's half, as a Promela model: idemlambda's SQS door (sqs.go; and
 * EventBridge's, eventbridge.go, a batch of one whose error Lambda retries)
 * over consumer.go's process, for one event E, delivered again and again
 * and in batches, one holder failing or dying. DESIGN.md ("What the model
 * proves") says what it proves and what it assumes.
 *
 * The event is one message m (the key its messageId), or with TWO, two
 * messages m0 and m1 that a producer sent for it (the key a producer's id,
 * SQSAttribute). Beside it on the queue is a message o of another event,
 * first in every batch while it is there: before E in its message group
 * (FIFO), or just another message of the batch (standard). SQS delivers
 * what it has not deleted, at least once: a message is received again once
 * its visibility timeout ends, which may come while the Lambda that
 * received it still runs (a slow holder, a visibility timeout shorter than
 * the function's), and a standard queue may deliver it twice at once. A
 * batch's Lambda processes its messages in order, each one Store.Do under
 * its event's key. It then answers with batchItemFailures, and SQS deletes
 * every message of the batch not in it (an acknowledgement); or it dies (a
 * crash, its deadline), and SQS deletes nothing. EventBridge's door is a
 * batch of one whose error Lambda retries.
 *
 * Store.Do is the one idem.pml proves (not modelled again): E's record is
 * claimed by one delivery at a time under a lease; the holder commits the
 * event's writes with the record, fenced on its lease, or fails and lapses
 * it, or dies and its lease runs out; a delivery that finds the record
 * completed replays it (nil: success), and one that finds a live lease gets
 * ErrInProgress. Do returns nil only once the record is completed; an error
 * may come with the commit landed (its answer unknown).
 *
 * Mirrors, and must change with:
 *   message    sqs.go SQS's loop (on FIFO a failure fails the messages after
 *              it unprocessed; any error of process is a batchItemFailure)
 *              and consumer.go process (Do's error as it is, ErrInProgress
 *              included); eventbridge.go returns that error
 *   answer     Lambda's partial batch response: SQS deletes every message
 *              of the batch that is not in batchItemFailures
 *
 * Configurations: standard (default), FIFO, TWO (two messages of one
 * event); MAXD, the batches received.
 *
 * Negative controls, each a compile-time switch that breaks one rule:
 *   ACK_IN_PROGRESS  a delivery whose key another delivery holds (Do's
 *                    ErrInProgress) is acknowledged, as a duplicate
 *   FIFO_NO_SKIP     on a FIFO queue, the messages after a failed one are
 *                    processed instead of failed unprocessed
 */

#define NONE   0
#define INPROG 1
#define DONE   2

#ifdef TWO
#define NM 2
#else
#define NM 1
#endif
#ifndef MAXD
#define MAXD 3           /* batches received, bounded */
#endif

/* The SQS door on a FIFO queue fails the messages after a failed one
   unprocessed, so that SQS redelivers them in order. */
#if defined(FIFO) && !defined(FIFO_NO_SKIP)
#define SKIP_AFTER_FAILURE true
#else
#define SKIP_AFTER_FAILURE false
#endif

/* Do's results */
#define OK      1        /* nil: executed, or replayed */
#define BUSY    2        /* ErrInProgress: another delivery holds the key */
#define FAILED  3        /* any other error */

byte st = NONE;          /* E's record */
bool live;               /* its lease is live */
byte holder;             /* the batch whose lease it is */
bool running[MAXD + 1];  /* a batch whose Lambda still runs */
byte slow = 1;           /* a running holder's lease may run out, once */

bool gone[NM];           /* a message of E deleted from the queue: acknowledged */
bool o_gone, o_done;     /* o deleted; o's event processed */
byte batches;

/* What the door makes of Do's result for a message: acknowledged (left out
   of batchItemFailures) only on success; any error, ErrInProgress
   included, is a failure, to be delivered again. */
#ifdef ACK_IN_PROGRESS
#define ACKED(x) (x != FAILED)
#else
#define ACKED(x) (x == OK)
#endif
#define RESULT(x) fail[i] = !ACKED(x); failed = failed || fail[i]

/* The door's processing of E's message i in batch d: on FIFO after a
   failure, failed unprocessed; else Store.Do under E's key: the claim,
   then the work and the commit. */
inline message(i) {
    if
    :: (mask & (1 << i)) ->
        atomic {
            if
            :: SKIP_AFTER_FAILURE && failed -> fail[i] = true
            :: else ->
                if
                :: st == DONE -> RESULT(OK)                               /* a replay */
                :: st == INPROG && live -> RESULT(BUSY)
                :: st == NONE || st == INPROG && !live ->
                    st = INPROG; live = true; holder = d; claimed = true
                fi
            fi
        };
        if
        :: claimed ->
            if
            :: atomic { holder == d && st == INPROG ->
#ifdef FIFO
                   assert(o_done);    /* FIFO: the event after o commits only after o's */
#endif
                   st = DONE; live = false; RESULT(OK); claimed = false }  /* committed */
            :: atomic { holder == d && st == INPROG ->                     /* committed, answer lost */
                   st = DONE; live = false; RESULT(FAILED); claimed = false }
            :: atomic { holder == d -> live = false; RESULT(FAILED); claimed = false }  /* failed: lapsed */
            :: atomic { holder != d -> RESULT(FAILED); claimed = false }  /* fenced: taken over */
            :: goto died                                                  /* the Lambda dies */
            fi
        :: else -> skip
        fi
    :: else -> skip
    fi
}

/* The answer for message i: SQS deletes it unless it is in
   batchItemFailures. */
inline answer(i) {
    if
    :: (mask & (1 << i)) && !fail[i] ->
        assert(st == DONE);           /* acknowledged only once its effect committed */
        gone[i] = true
    :: else -> skip
    fi
}

/* One batch, as the SQS door processes it: o (if it is in the batch), then
   E's messages in mask, in order; then the answer. */
proctype Batch(byte d; bool with_o; byte mask) {
    bool failed, o_ok, claimed;
    bool fail[NM];

    if
    :: with_o ->
        if
        :: o_done = true; o_ok = true
        :: failed = true
        :: goto died
        fi
    :: else -> skip
    fi;
    message(0);
#ifdef TWO
    message(1);
#endif
    atomic {
        answer(0);
#ifdef TWO
        answer(1);
#endif
        if :: o_ok -> o_gone = true :: else -> skip fi;
        running[d] = false
    };
    goto end;
died:
    running[d] = false;               /* nothing deleted; its lease runs out */
end:
    skip
}

/* SQS: a batch of what it has not deleted, received again and again (a
   visibility timeout that ends, a standard queue's duplicate), while the
   Lambdas that received it earlier may still run; o first while it is
   there. */
active proctype Poller() {
    byte mask;
    bool with_o;
end:
    do
    :: atomic {
        batches < MAXD && !(gone[0] && gone[NM - 1]) ->
        batches++; running[batches] = true;
        if
        :: !gone[0] -> mask = 1
        :: NM > 1 && !gone[NM - 1] -> mask = 1 << (NM - 1)
        :: NM > 1 && !gone[0] && !gone[NM - 1] -> mask = 3
        fi;
        with_o = !o_gone;
        run Batch(batches, with_o, mask);
        mask = 0; with_o = false
       }
    od
}

/* A dead holder's lease runs out; a running holder's may run out too,
   once (a slow holder). */
active proctype Clock() {
end:
    do
    :: atomic { st == INPROG && live && !running[holder] -> live = false }
    :: atomic { st == INPROG && live && running[holder] && slow > 0 -> slow--; live = false }
    od
}
