// The Powertools side of the side-by-side benchmark (sidebyside_test.go
// drives it). It runs Powertools for AWS Lambda (TypeScript)'s idempotency
// utility, as its README shows it, around a handler shaped like pkg/idem's
// benchmark work: it may put one order, and answers 201 with the order id.
//
// It reads one JSON command a line on stdin and answers one JSON line on
// stdout. It times only what it is asked to run; the driver counts the
// DynamoDB calls at a proxy in front of the engine.
//
// Configuration: the DynamoDB persistence layer with its defaults (a table
// keyed on "id"), keyed on the Idempotency-Key header (eventKeyJmesPath;
// without it Powertools keys on the whole event), everything else as it
// comes. The Lambda context is a stand-in whose remaining time the driver
// chooses (Powertools takes its in-progress lease from it).
'use strict';

const { randomUUID } = require('node:crypto');
const readline = require('node:readline');
const { DynamoDBClient, PutItemCommand } = require('@aws-sdk/client-dynamodb');
const { makeIdempotent, IdempotencyConfig } = require('@aws-lambda-powertools/idempotency');
const { DynamoDBPersistenceLayer } = require('@aws-lambda-powertools/idempotency/dynamodb');

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

const client = new DynamoDBClient({
  region: 'us-east-1',
  endpoint: env('DYNAMODB_ENDPOINT'),
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
const ordersTable = env('PT_ORDERS_TABLE');
// One persistence layer per configuration, as Powertools requires.
const persistence = () => new DynamoDBPersistenceLayer({ tableName: env('PT_TABLE'), awsSdkV3Client: client });

let executions = 0;
const holds = new Map(); // idempotency key -> what its first execution waits for

async function handler(event) {
  executions++;
  const key = event.headers['idempotency-key'];
  const id = `ord_${randomUUID()}`;
  const hold = holds.get(key);
  if (hold) {
    holds.delete(key);
    await hold();
  }
  if (event.write) {
    await client.send(new PutItemCommand({
      TableName: ordersTable,
      Item: { scope: { S: key }, order_id: { S: id } },
      ConditionExpression: 'attribute_not_exists(order_id)',
    }));
  }
  return { statusCode: 201, body: JSON.stringify({ id, status: 'created' }) };
}

const byHeader = makeIdempotent(handler, {
  persistenceStore: persistence(),
  config: new IdempotencyConfig({ eventKeyJmesPath: 'headers."idempotency-key"' }),
});
const validated = makeIdempotent(handler, {
  persistenceStore: persistence(),
  config: new IdempotencyConfig({ eventKeyJmesPath: 'headers."idempotency-key"', payloadValidationJmesPath: 'body' }),
});

function lambdaContext(remainingMs) {
  const deadline = Date.now() + remainingMs;
  return {
    functionName: 'bench', awsRequestId: randomUUID(), invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:bench',
    memoryLimitInMB: '128', functionVersion: '$LATEST', logGroupName: 'bench', logStreamName: 'bench', callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {}, fail() {}, succeed() {},
  };
}

function event(key, body, write) {
  return { headers: { 'idempotency-key': key, 'content-type': 'application/json' }, body, write };
}

// call invokes fn and names its outcome: "201 ord_…" or the error's name.
async function call(fn, key, body, write, remainingMs = 30000) {
  try {
    const res = await fn(event(key, body, write), lambdaContext(remainingMs));
    return `${res.statusCode} ${JSON.parse(res.body).id}`;
  } catch (err) {
    return err.name || String(err);
  }
}

const tally = (answers) => answers.reduce((t, a) => {
  const k = a.replace(/ ord_.*/, '');
  t[k] = (t[k] || 0) + 1;
  return t;
}, {});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const commands = {
  // seq: the keys one after another; a repeated key is a replay.
  async seq({ keys, body, write }) {
    const answers = [];
    const t0 = performance.now();
    for (const key of keys) answers.push(await call(byHeader, key, body, write));
    return { ms: performance.now() - t0, answers: tally(answers) };
  },
  // race: n calls on one key at once.
  async race({ key, body, n }) {
    const answers = await Promise.all(Array.from({ length: n }, () => call(byHeader, key, body, true)));
    return { answers: tally(answers) };
  },
  // slow: the holder's lease (the context's remaining time) is leaseMs; it
  // runs past it, a retry takes the key over and completes, then the holder
  // finishes; a replay afterwards shows whose response the key keeps.
  async slow({ key, body, leaseMs }) {
    let retry;
    holds.set(key, async () => {
      await sleep(leaseMs + 200);
      retry = await call(byHeader, key, body, true, leaseMs);
    });
    const holder = await call(byHeader, key, body, true, leaseMs);
    const replay = await call(byHeader, key, body, true);
    return { holder, retry, replay, replayIs: replay.split(' ')[1] === holder.split(' ')[1] ? 'holder' : replay.split(' ')[1] === retry.split(' ')[1] ? 'retry' : 'neither' };
  },
  // otherBody: the same key with another body, by default and with payload
  // validation on.
  async otherBody({ key, body, other }) {
    const first = await call(byHeader, key, body, false);
    const second = await call(byHeader, key, other, false);
    const vFirst = await call(validated, `${key}-validated`, body, false);
    const vSecond = await call(validated, `${key}-validated`, other, false);
    return { first, second, secondIsReplay: first === second, validatedFirst: vFirst, validatedSecond: vSecond };
  },
};

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {

  const cmd = JSON.parse(line);
  const before = executions;
  let out;
  try {
    out = await commands[cmd.op](cmd);
  } catch (err) {
    out = { error: String(err && err.stack || err) };
  }
  out.executions = executions - before;
  process.stdout.write(`${JSON.stringify(out)}\n`);

});
