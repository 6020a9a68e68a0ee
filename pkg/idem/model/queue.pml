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
 * STREAM models the stream doors instead (kinesis.go, dynamodbstream.go
 * over stream.go's streamBatch): a shard of three records, e0 and e1 two
 * changes of one key (a partition key, an item) with o of another key
 * between them. Lambda sends a shard one batch at a time, one record or
 * more from its checkpoint on; the door processes them in order, each Store.Do under
 * its own id, and once one is not done the records after it with its key
 * are failed unprocessed; the answer names the first record not done, and
 * Lambda moves its checkpoint there (every record before it is
 * acknowledged) and sends the rest again; or the Lambda dies, its commit
 * perhaps in flight (landing later unless a takeover fenced it), and the
 * checkpoint stays. Property: per key, effects commit in stream order, each
 * once, and the checkpoint passes a record only once its effect committed.
 *
 *   record,      stream.go streamBatch (the held keys, the first failure)
 *   StreamBatch  and the answer's one BatchItemFailure (kinesis.go,
 *                dynamodbstream.go); Lambda's checkpoint at the record named
 *
 * Configurations: standard (default), FIFO, TWO (two messages of one
 * event), STREAM; MAXD, the batches received.
 *
 * Negative controls, each a compile-time switch that breaks one rule:
 *   ACK_IN_PROGRESS  a delivery whose key another delivery holds (Do's
 *                    ErrInProgress) is acknowledged, as a duplicate
 *   FIFO_NO_SKIP     on a FIFO queue, the messages after a failed one are
 *                    processed instead of failed unprocessed
 *   STREAM_NO_HOLD   on a stream, the records after a failed one of the
 *                    same key are processed instead of failed unprocessed
 *   STREAM_NAME_LAST on a stream, the answer names the last failed record
 *                    instead of the first
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

bool running[MAXD + 1];  /* a batch whose Lambda still runs */
byte batches;

/* What the door makes of Do's result for a message: acknowledged (left out
   of batchItemFailures) only on success; any error, ErrInProgress
   included, is a failure, to be delivered again. */
#ifdef ACK_IN_PROGRESS
#define ACKED(x) (x != FAILED)
#else
#define ACKED(x) (x == OK)
#endif

#ifndef STREAM
byte st = NONE;          /* E's record */
bool live;               /* its lease is live */
byte holder;             /* the batch whose lease it is */
byte slow = 1;           /* a running holder's lease may run out, once */

bool gone[NM];           /* a message of E deleted from the queue: acknowledged */
bool o_gone, o_done;     /* o deleted; o's event processed */

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
#else /* STREAM */

/* The shard: e0 (record 0) and e1 (record 2) are two changes of one key,
   o (record 1) a change of another, in stream order. */
#define NR 3
#define KEY(r) (r == 1)

#ifdef STREAM_NO_HOLD
#define HOLD false
#else
#define HOLD true
#endif
#ifdef STREAM_NAME_LAST
#define NAME_LAST true
#else
#define NAME_LAST false
#endif

byte rst[NR];            /* each record's idempotency record */
bool rlive[NR];          /* its lease is live */
byte rholder[NR];        /* the batch whose lease it is */
byte inflight[NR];       /* the dead batch whose commit of it is in flight */
byte commits[NR];        /* its effect's commits */
byte cp;                 /* Lambda's checkpoint: the first record not acknowledged */

/* Record r's effect commits: per key in stream order (e1 only after e0),
   each once. */
inline commit(r) {
    assert(r != 2 || rst[0] == DONE);
    commits[r]++;
    assert(commits[r] == 1);
    rst[r] = DONE; rlive[r] = false
}

/* The door's processing of record r in batch d: failed unprocessed once
   a record of its key failed; else Store.Do under r's id. */
inline record(r) {
    if
    :: HOLD && held[KEY(r)] -> skip
    :: else ->
        atomic {
            if
            :: rst[r] == DONE -> res = OK                                 /* a replay */
            :: rst[r] == INPROG && rlive[r] -> res = BUSY
            :: rst[r] == NONE || rst[r] == INPROG && !rlive[r] ->
                rst[r] = INPROG; rlive[r] = true; rholder[r] = d; claimed = true
            fi
        };
        if
        :: claimed ->
            if
            :: atomic { rholder[r] == d && rst[r] == INPROG -> commit(r); res = OK; claimed = false }
            :: atomic { rholder[r] == d && rst[r] == INPROG -> commit(r); res = FAILED; claimed = false } /* answer lost */
            :: atomic { rholder[r] == d -> rlive[r] = false; res = FAILED; claimed = false }  /* failed: lapsed */
            :: atomic { rholder[r] != d -> res = FAILED; claimed = false }             /* fenced: taken over */
            :: inflight[r] = d; goto died                                  /* dies, its commit in flight */
            :: goto died                                                   /* dies before its commit */
            fi
        :: else -> skip
        fi;
        if
        :: !ACKED(res) ->
            held[KEY(r)] = true;
            if :: first == last || NAME_LAST -> first = r :: else -> skip fi
        :: else -> skip
        fi
    fi
}

/* One batch, the records from the checkpoint up to last (its batch size),
   as streamBatch processes them; then the answer: Lambda checkpoints at the
   first record not done (at last if none), acknowledging every record
   before it. */
proctype StreamBatch(byte d; byte last) {
    byte r = cp, first = last, res;
    bool claimed;
    bool held[2];

    do
    :: r < last -> record(r); r++
    :: else -> break
    od;
    atomic {
        r = cp;
        do
        :: r < first -> assert(rst[r] == DONE); r++     /* acknowledged only once committed */
        :: else -> break
        od;
        cp = first;
        running[d] = false
    };
    goto end;
died:
    running[d] = false;               /* the checkpoint stays; its leases run out */
end:
    skip
}

/* Lambda: a shard's batches one at a time, each from the checkpoint on,
   of one record or more, until the checkpoint passes the last record. */
active proctype Shard() {
    byte last;
end:
    do
    :: atomic {
        batches < MAXD && cp < NR && !running[batches] ->
        batches++; running[batches] = true;
        last = cp + 1;
        do
        :: last < NR -> last++
        :: break
        od;
        run StreamBatch(batches, last);
        last = 0
       }
    od
}

/* A dead holder's lease runs out; its commit in flight lands later,
   fenced (unless a takeover holds the record now), or never. */
inline lapse(r) {
    atomic { rst[r] == INPROG && rlive[r] && !running[rholder[r]] -> rlive[r] = false }
}
inline land(r) {
    atomic { inflight[r] != 0 && rholder[r] == inflight[r] && rst[r] == INPROG -> commit(r); inflight[r] = 0 }
}
inline lose(r) {
    atomic { inflight[r] != 0 -> inflight[r] = 0 }
}

active proctype Clock() {
end:
    do
    :: lapse(0) :: lapse(1) :: lapse(2)
    :: land(0) :: land(1) :: land(2)
    :: lose(0) :: lose(1) :: lose(2)
    od
}
#endif
