"""moto's server, with DynamoDB's item operations made atomic to each other,
and transactions that cost what they touch.

Atomicity. moto 5.2.1 runs TransactWriteItems by deep-copying each table it
touches and, when the transaction is cancelled, assigning the copies back,
with no lock: any write that another request committed in between is
silently undone (the project's test
TestConcurrentWritesSurviveCancelledTransactions measured it; DynamoDB and
DynamoDB Local never do this). Holding one lock around every item read and
write of the backend makes each operation atomic, as DynamoDB documents them
to be: nothing can commit between a transaction's backup and its restore.

Cost. The deep copy makes a transaction cost time in proportion to the
tables' size: at 1,000 records it halved the library's throughput. Under the
lock only the transaction's own items can change while it runs, so a backup
of those items is as good as a copy of the tables: moto's transaction code
runs unchanged, except that its whole-table copy is skipped, and a cancelled
transaction puts back exactly the items it touched (a put of a new item is
removed again, an update or a delete is undone), and drops the stream records
it added. The project's conformance test (local/dynamo, TestConformance*)
holds the answers to what they were.
"""
import copy
import functools
import gc
import re
import sys
import threading

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.server import main

_lock = threading.RLock()  # re-entrant: batch and transaction calls nest


def _atomic(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with _lock:
            return method(*args, **kwargs)
    return wrapper


for _name in ("put_item", "update_item", "delete_item", "get_item", "query", "scan",
              "transact_get_items", "batch_get_item", "batch_write_item"):
    setattr(DynamoDBBackend, _name, _atomic(getattr(DynamoDBBackend, _name)))


# --- transactions that back up their items, not their tables ---------------

_in_transaction = threading.local()


class _NoTableCopy:
    """Stands for the copy module inside moto.dynamodb.models: while this
    thread runs a transaction, the deep copy of a Table (moto's backup) is the
    table itself, so that moto's restore assigns the table to itself. Every
    other copy, and every copy on other threads, is a real one."""

    def deepcopy(self, x, memo=None):
        if isinstance(x, Table) and getattr(_in_transaction, "on", False):
            return x
        return copy.deepcopy(x, memo)

    def __getattr__(self, name):
        return getattr(copy, name)


dynamodb_models.copy = _NoTableCopy()


def _item_key(table, op_type, op):
    """The (hash, range) of the item an action of a transaction touches, as
    the table stores it; None when the action names no usable key (moto then
    fails that action itself, before it writes)."""
    attrs = op.get("Item") if op_type == "Put" else op.get("Key")
    try:
        hash_value = DynamoType(attrs[table.hash_key_attr])
        range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    except (KeyError, TypeError, AttributeError):
        return None
    return hash_value, range_value


def _backup(backend, transact_items):
    """A copy of every item the transaction may touch (None where there is
    none yet), and each touched table's stream length."""
    items, streams = {}, {}
    for action in transact_items:
        if not isinstance(action, dict) or len(action) != 1:
            continue
        op_type, op = next(iter(action.items()))
        table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        key = _item_key(table, op_type, op) if table is not None else None
        if key is None or (id(table), key) in items:
            continue
        old = table.get_item(*key) if table.range_key_attr is None or key[1] else None
        items[(id(table), key)] = (table, key, copy.deepcopy(old))
        if table.stream_shard is not None:
            streams[id(table)] = (table.stream_shard, len(table.stream_shard.items))
    return items, streams


def _restore(items, streams):
    for table, (hash_value, range_value), old in items.values():
        if range_value is None:
            if old is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = old
            continue
        bucket = table.items[hash_value]
        if old is None:
            bucket.pop(range_value, None)
        else:
            bucket[range_value] = old
        if not bucket:
            del table.items[hash_value]
    for shard, length in streams.values():
        del shard.items[length:]


def _transact_write_items(original):
    def transact_write_items(self, transact_items):
        with _lock:
            items, streams = _backup(self, transact_items)
            _in_transaction.on = True
            try:
                return original(self, transact_items)
            except BaseException:
                # moto restores its (identical) tables only where it cancels;
                # the touched items come back here on every failure.
                _restore(items, streams)
                raise
            finally:
                _in_transaction.on = False
    return transact_write_items


DynamoDBBackend.transact_write_items = _transact_write_items(DynamoDBBackend.transact_write_items)

# No automatic full collections (see the top of this file); what moto loaded
# at start is frozen out of the young ones' way too.
gc.set_threshold(700, 10, 1 << 30)

if __name__ == "__main__":
    gc.freeze()
    sys.argv[0] = re.sub(r"(-script\.pyw|\.exe)?$", "", sys.argv[0])
    sys.exit(main())
