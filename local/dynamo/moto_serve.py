"""moto's server, with DynamoDB's item operations made atomic to each other.

moto 5.2.1 runs TransactWriteItems by deep-copying each table it touches and,
when the transaction is cancelled, assigning the copies back, with no lock:
any write that another request committed in between is silently undone (the
project's test TestConcurrentWritesSurviveCancelledTransactions measured it;
DynamoDB and DynamoDB Local never do this). Holding one lock around every
item read and write of the backend makes each operation atomic, as DynamoDB
documents them to be, and the undo harmless: nothing can commit between a
transaction's copy and its restore.
"""
import functools
import re
import sys
import threading

from moto.dynamodb.models import DynamoDBBackend
from moto.server import main

_lock = threading.RLock()  # re-entrant: batch and transaction calls nest


def _atomic(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with _lock:
            return method(*args, **kwargs)
    return wrapper


for _name in ("put_item", "update_item", "delete_item", "get_item", "query", "scan",
              "transact_write_items", "transact_get_items", "batch_get_item", "batch_write_item"):
    setattr(DynamoDBBackend, _name, _atomic(getattr(DynamoDBBackend, _name)))

if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\.pyw|\.exe)?$", "", sys.argv[0])
    sys.exit(main())
