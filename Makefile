# The front door. `make help` lists the targets.
SHELL := /usr/bin/env bash
GO    ?= go
# Linux binaries for Lambda: no cgo, no RPC shim (provided.al2023 speaks the
# Runtime API), stripped.
LAMBDA_FLAGS := CGO_ENABLED=0 GOOS=linux
LAMBDA_BUILD := -tags lambda.norpc -trimpath -ldflags='-s -w' -buildvcs=false
FUNCTIONS    := charge order orderstats
HOST_ARCH    := $(shell $(GO) env GOARCH)

.PHONY: help check test vet vet-fast lint fuzz soak chaos mutate mutate-protocol mutate-gremlins run demo traces model bench bench-powertools build invoke deps deploy clean sam-local-env

help:
	@echo "make run     the whole API on 127.0.0.1:3000: DynamoDB engine, provider simulator, functions under the Lambda RIE"
	@echo "make demo    a guided walk through the guarantees, against make run's stack"
	@echo "make traces  [N=2]: make run's requests as traces, a tree each (the last N), from local/.run/traces.jsonl"
	@echo "make test    vet and every test, on a local engine the tests start themselves; golangci-lint runs beside them"
	@echo "make check   the inner loop: gofmt, go vet and go test -short ./... (the long runs skip, each saying which target runs it)"
	@echo "make vet     gofmt, go vet, golangci-lint (.golangci.yml) and cfn-lint template.yaml"
	@echo "make model   the Promela models (the protocol, the client, the queue) with spin, their negative controls and the larger runs make test leaves out"
	@echo "make bench   every figure of BENCHMARKS.md, into bin/bench/, then its glance table and docs/bench/*.svg from that run (installs Powertools from npm into bin/powertools)"
	@echo "make bench-powertools   only pkg/idem beside Powertools for AWS Lambda (TypeScript)"
	@echo "make soak    the race storm at 1000 operations, the largest model runs, the chaos campaign at 5000, and long fuzz runs, a million inputs per target (RELIABILITY.md)"
	@echo "make chaos   [CHAOS_SEED=1 CHAOS_OPS=1000 CHAOS_CLIENTS=16]: every fault at once through the whole local stack, and a checker over what the world holds afterwards"
	@echo "make mutate  the mutation run, not part of make test: the protocol mutants (local/mutate/protocol.txt), each killed by a named test or argued equivalent, into bin/mutate/protocol.md; then go-gremlins over pkg/idem, its packages and pkg/idemclient, its reports in bin/mutate/gremlins-*.json"
	@echo "make mutate-protocol  [MUTANTS=\"fence-token ...\"]: make mutate's protocol mutants alone, or those named"
	@echo "make mutate-gremlins  [TARGETS=\"pkg/idem pkg/idemclient\"] [GREMLINS_EFFICACY=90]: make mutate's go-gremlins run alone, or over the directories named; below that efficacy it fails"
	@echo "make build   bootstrap binaries: bin/<fn>/bootstrap (host arch) and bin/arm64/<fn>/bootstrap"
	@echo "make invoke  FN=charge EVENT=events/charge-create.json [TIMES=2]: run a bootstrap under the Lambda RIE against make run's stack"
	@echo "make sam-local-env  [SAM_HOST=host.docker.internal]: the engine and the simulator for sam local, and local/.run/sam-env.json for --env-vars"
	@echo "make deploy  sam build && sam deploy"

deps:
	@local/ensure-dynamodb-local.sh
	@local/ensure-spin.sh

# The inner loop: gofmt, go vet and the short tier. Under -short the long
# runs (the chaos campaign, the SAM arm64 build, the whole-stack runs, the
# models' larger runs, the cost and load measurements) skip, each with a
# line saying which target runs it; make test runs everything.
check: deps
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -short ./...

vet: vet-fast lint

# What make test runs before its tests; golangci-lint runs beside them.
vet-fast:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	@command -v cfn-lint >/dev/null || { echo "cfn-lint not found: pip install cfn-lint"; exit 1; }
	cfn-lint template.yaml

# golangci-lint, pinned in tools/go.mod, with .golangci.yml.
lint:
	$(GO) tool -modfile=tools/go.mod golangci-lint run ./...

# Every package's tests, then a short run of each fuzz target, with golangci-lint
# beside them (local/test.sh), under gotestsum (pinned in tools/go.mod): a
# line per package as it ends, what failed in full, and one closing line,
# "DONE N tests[, N failures][, N errors] in Ns"; what a failure kept from
# running, and a lint finding, count as errors there. Exits non-zero when
# anything failed.
test: deps vet-fast
	@GO="$(GO)" FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZTIME=$(FUZZTIME) \
	  $(GO) tool -modfile=tools/go.mod gotestsum --format pkgname --hide-summary=skipped --ignore-non-json-output-lines --raw-command -- local/test.sh

# The fuzz targets, dir:FuzzX with dir under pkg/idem: make fuzz runs each
# in turn, make test too after every package passed.
FUZZ_TARGETS := internal/canonjson:FuzzCanonical internal/canonjson:FuzzCanonicalMatchesOld internal/canonjson:FuzzOneFingerprintOneDecoding \
  internal/door:FuzzParseKey internal/door:FuzzHTTPAPI internal/door:FuzzFunctionURL internal/door:FuzzRESTAPI \
  internal/door:FuzzALB internal/door:FuzzWrap internal/door:FuzzFunction

# A short run of each fuzz target (package:target); make soak runs them longer.
# A count, not a duration: Go 1.26's fuzzing coordinator can fail a target
# with a bare "context deadline exceeded" when a duration ends on a loaded
# machine (golang/go#75804, fixed in Go 1.27); a count has no deadline.
FUZZTIME ?= 20000x
fuzz:
	@for f in $(FUZZ_TARGETS); do \
	  echo "• fuzz $${f#*:} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime $(FUZZTIME) ./pkg/idem/$${f%%:*} || exit 1; \
	done

# The long runs: the race storm at 1000 logical operations, the models'
# largest runs (DESIGN.md, "What the model proves"), the chaos
# campaign at 5000, a million fuzz inputs per target.
soak: deps
	STORM_OPS=1000 $(GO) test -count=1 -timeout 30m -run 'TestRaceStorm$$' -v ./functions/charge
	MODEL_SIZE=soak $(GO) test -count=1 -timeout 90m -v -run TestModel ./pkg/idem/model
	@$(MAKE) --no-print-directory chaos CHAOS_OPS=5000
	@$(MAKE) --no-print-directory fuzz FUZZTIME=1000000x

# The chaos campaign (local/chaos): CHAOS_OPS logical operations from
# CHAOS_CLIENTS concurrent clients through the whole local stack, faults
# drawn from CHAOS_SEED, several at once; then a checker over the provider's
# ledger, the tables and every answer. Its table and closing line go to
# bin/chaos/seed-<seed>.md; then the seeds that ever failed, each at its
# size. make test runs a short one (200 operations).
CHAOS_SEED    ?= 1
CHAOS_OPS     ?= 1000
CHAOS_CLIENTS ?= 16
chaos: deps
	@mkdir -p bin/chaos
	@set -o pipefail; CHAOS_SEED=$(CHAOS_SEED) CHAOS_OPS=$(CHAOS_OPS) CHAOS_CLIENTS=$(CHAOS_CLIENTS) CHAOS_OUT=$(CURDIR)/bin/chaos/seed-$(CHAOS_SEED).md \
	  $(GO) test -count=1 -timeout 60m -run 'TestChaos$$' -v ./local/chaos | grep --line-buffered -v '^=== '
	@cat bin/chaos/seed-$(CHAOS_SEED).md
	CHAOS_REGRESSIONS=1 $(GO) test -count=1 -timeout 60m -run 'TestChaosRegressions$$' ./local/chaos

# The mutation run, not part of make test: the protocol mutants
# (local/mutate/protocol.txt, by local/cmd/mutate), each a change written
# to break one guarantee with the test named to kill it, on a scratch copy
# of the tree with one engine for every mutant's tests; then go-gremlins
# over the library and its client. Either failing fails make mutate.
MUTANTS ?=
mutate:
	@st=0; $(MAKE) --no-print-directory mutate-protocol || st=1; $(MAKE) --no-print-directory mutate-gremlins || st=1; exit $$st

mutate-protocol: deps
	@$(GO) build -o bin/local/mutate ./local/cmd/mutate && rm -f bin/mutate/protocol.md
	@bin/local/mutate protocol $(MUTANTS); st=$$?; cat bin/mutate/protocol.md 2>/dev/null; exit $$st

# go-gremlins (pinned in tools/go.mod) over each of TARGETS and the
# packages below it (not the model's Promela harness nor the tests' shared
# fixture), with its own report (bin/mutate/gremlins-<target>.json) and its
# own gate: an efficacy (killed over killed plus lived) under
# GREMLINS_EFFICACY percent fails it. The tests run with -short and without
# the examples (an example creates its tables under fixed names, which
# every mutant's run after the first would find), and -count=1 (go-gremlins
# bounds each mutant's run by the coverage run's time, which a cached run
# would make nothing); what only a long run or an example kills lives, so
# the figure is a lower bound.
TARGETS ?= pkg/idem pkg/idemclient
GREMLINS_EFFICACY ?= 90
GREMLINS_WORKERS ?= 3
mutate-gremlins: deps
	@mkdir -p bin/mutate; st=0; for d in $(TARGETS); do \
	  echo "• go-gremlins over $$d"; \
	  env -u GREMLINS_CONFIG GOFLAGS='-short -count=1 -run=^(Test|Fuzz)' $(GO) tool -modfile=tools/go.mod gremlins unleash \
	    --workers $(GREMLINS_WORKERS) --timeout-coefficient 3 --threshold-efficacy $(GREMLINS_EFFICACY) \
	    -o bin/mutate/gremlins-$$(echo $$d | tr / -).json -E '^model/' -E '^internal/testbed/' ./$$d || st=1; \
	done; exit $$st

# Built, then run as make's own child (not under go run, which would answer
# an interrupt with exit status 1): Ctrl-C or SIGTERM stops the stack, and
# it exits 0 with one line (local/cmd/run).
run: deps build
	@$(GO) build -o bin/local/run ./local/cmd/run
	@bin/local/run

demo:
	$(GO) run ./local/cmd/demo

# The spans make run's functions wrote (local/.run/traces.jsonl), a tree per
# trace; N keeps the last N.
N ?= 0
traces:
	@$(GO) run ./local/cmd/traces -n $(N)

# Powertools for AWS Lambda (TypeScript)'s idempotency utility, pinned by
# local/bench/powertools/package-lock.json, for the side-by-side run: from npm
# into bin/powertools (ignored by git).
POWERTOOLS := bin/powertools/node_modules/@aws-lambda-powertools/idempotency/package.json
$(POWERTOOLS): local/bench/powertools/package.json local/bench/powertools/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "make bench needs Node.js and npm for the Powertools comparison"; exit 1; }
	@mkdir -p bin/powertools
	cp local/bench/powertools/package.json local/bench/powertools/package-lock.json bin/powertools/
	cd bin/powertools && npm ci --no-audit --no-fund
	@touch $@

# Every figure of BENCHMARKS.md, into bin/bench/ (about eleven minutes on two
# cores); where a benchmark is compared with another (the library with its
# floor, tracing on with tracing off), benchstat (pinned in tools/go.mod)
# prints the comparison from the samples (bin/bench/*-benchstat.txt); then,
# from that run alone, the glance table BENCHMARKS.md opens
# with (in place between its markers, and bin/bench/glance.md) and the
# charts (docs/bench/*.svg), by local/cmd/benchchart. The
# outputs of an earlier run are removed first, and benchchart refuses any
# older than this run's start, so that nothing it shows is from two runs.
# Each size below is the run BENCHMARKS.md reports; a smaller one (make
# bench FLOOR_REQUESTS=5 ...) tries the pipeline, not the figures.
LOAD_REQUESTS ?= 10000
# Requests that warm a new engine's JVM before a load run measures anything
# (its CPU per request falls about fivefold over the first few thousand).
LOAD_WARMUP ?= 5000
LOAD_SWEEP ?= 1
LOAD_FLOOR_ROUNDS ?= 6
LOAD_FLOOR_REQUESTS ?= 6000
FLOOR_REQUESTS ?= 100
FLOOR_ROUNDS ?= 7
CACHE_REPLAYS ?= 2000
TRACE_ROUNDS ?= 5
TRACE_REQUESTS ?= 100
CONCURRENCY_REQUESTS ?= 1200
CONCURRENCY_RIE_REQUESTS ?= 1200
INPROCESS_COUNT ?= 6
# Runs of each in-process benchmark, tracing on and off, that benchstat
# compares (it gives a confidence interval from 6 on).
TRACE_COUNT ?= 6
BENCHSTAT := $(GO) tool -modfile=tools/go.mod benchstat
INPROCESS_BENCHTIME ?= 1s
# Where the glance and the charts go: a trial run may send them elsewhere
# (BENCH_DOC= BENCH_SVG=bin/bench/svg), leaving the committed ones alone.
BENCH_DOC ?= BENCHMARKS.md
BENCH_SVG ?= docs/bench
BENCHCHART := bin/local/benchchart
bench: deps build $(POWERTOOLS)
	@mkdir -p bin/bench bin/local && rm -f bin/bench/*.md bin/bench/*.txt bin/bench/*.tmp bin/bench/run.json
	@$(GO) test -count=1 ./local/cmd/benchchart && $(GO) build -o $(BENCHCHART) ./local/cmd/benchchart
	@$(BENCHCHART) -start -dir bin/bench -go "$$($(GO) env GOVERSION)" -node "$$(node --version)"
	@echo "• library overhead in process ($(INPROCESS_COUNT) runs each)"
	@set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -count $(INPROCESS_COUNT) -benchtime $(INPROCESS_BENCHTIME) ./pkg/idem ./pkg/idem/idemlambda | tee bin/bench/inprocess.txt
	@echo "• calls and capacity per request"
	@set -o pipefail; { echo "Engine: DynamoDB Local 3.3.1 (calls asserted, capacity by DynamoDB's rules)."; echo; \
	  $(GO) test -count=1 -run 'TestCostPerRequest$$' -v ./pkg/idem | grep '^ *|' | sed 's/^ *//'; } | tee bin/bench/cost.md
	@echo "• the library beside its floor: the same DynamoDB calls made bare"
	FLOOR_REQUESTS=$(FLOOR_REQUESTS) FLOOR_ROUNDS=$(FLOOR_ROUNDS) BENCH_OUT=$(CURDIR)/bin/bench/floor.md BENCH_RAW=$(CURDIR)/bin/bench/floor.txt $(GO) test -count=1 -timeout 15m -run 'TestFloor$$' ./pkg/idem
	@set -o pipefail; $(BENCHSTAT) -col /side bin/bench/floor.txt | tee bin/bench/floor-benchstat.txt
	@echo "• tracing on: each path with every call traced beside it untraced"
	TRACE_ROUNDS=$(TRACE_ROUNDS) TRACE_REQUESTS=$(TRACE_REQUESTS) BENCH_OUT=$(CURDIR)/bin/bench/tracing.md $(GO) test -count=1 -run 'TestTracingCost$$' ./pkg/idem
	@set -o pipefail; $(GO) test -run '^$$' -bench '^Benchmark(FirstRequest|Replay|FirstRequestAtomic)(Traced)?$$' -benchmem -count $(TRACE_COUNT) ./pkg/idem \
	  | sed -E 's/^(Benchmark(FirstRequest|Replay|FirstRequestAtomic))Traced(-[0-9]+)?([[:space:]])/\1\/tracing=on\3\4/; t; s/^(Benchmark(FirstRequest|Replay|FirstRequestAtomic))(-[0-9]+)?([[:space:]])/\1\/tracing=off\3\4/' > bin/bench/tracing.txt
	@set -o pipefail; $(BENCHSTAT) -col /tracing bin/bench/tracing.txt | tee bin/bench/tracing-benchstat.txt
	@echo "• replays from the execution environment's cache"
	CACHE_REPLAYS=$(CACHE_REPLAYS) BENCH_OUT=$(CURDIR)/bin/bench/cache.md $(GO) test -count=1 -run 'TestCacheReplayCost$$' ./pkg/idem
	@echo "• cold start and size"
	BENCH_OUT=$(CURDIR)/bin/bench/coldstart.md $(GO) test -count=1 -run 'TestColdStart$$' ./local/rie
	@for fn in $(FUNCTIONS); do ls -l bin/arm64/$$fn/bootstrap | awk -v f=$$fn '{printf "%s linux/arm64 stripped: %.1f MB\n", f, $$5/1e6}'; done | tee bin/bench/sizes.txt
	@echo "• the local engine's transactions by table size"
	ENGINE_SWEEP=1 BENCH_OUT=$(CURDIR)/bin/bench/engine.tmp $(GO) test -count=1 -timeout 20m -run 'TestTransactionCostByTableSize$$' ./local/dynamo
	@{ echo "Engine: DynamoDB Local 3.3.1."; echo; cat bin/bench/engine.tmp; } > bin/bench/engine.md && rm bin/bench/engine.tmp
	@echo "• the order handler under load on the local engine: plain, Do, DoAtomic"
	LOAD_WARMUP=$(LOAD_WARMUP) LOAD_REQUESTS=$(LOAD_REQUESTS) LOAD_SWEEP=$(LOAD_SWEEP) BENCH_OUT=$(CURDIR)/bin/bench/load.md $(GO) test -count=1 -timeout 60m -run 'TestLoad$$' ./functions/order
	@echo "• the order handler under load beside the same calls made bare"
	LOAD_WARMUP=$(LOAD_WARMUP) LOAD_ROUNDS=$(LOAD_FLOOR_ROUNDS) LOAD_FLOOR_REQUESTS=$(LOAD_FLOOR_REQUESTS) BENCH_OUT=$(CURDIR)/bin/bench/loadfloor.md $(GO) test -count=1 -timeout 30m -run 'TestLoadFloor$$' ./functions/order
	@echo "• concurrent invocations in one process (AWS_LAMBDA_MAX_CONCURRENCY)"
	LOAD_WARMUP=$(LOAD_WARMUP) CONCURRENCY_REQUESTS=$(CONCURRENCY_REQUESTS) BENCH_OUT=$(CURDIR)/bin/bench/concurrency.md $(GO) test -count=1 -timeout 30m -run 'TestConcurrentInvocations$$' ./functions/order
	LOAD_WARMUP=$(LOAD_WARMUP) CONCURRENCY_RIE_REQUESTS=$(CONCURRENCY_RIE_REQUESTS) BENCH_OUT=$(CURDIR)/bin/bench/concurrency-rie.md $(GO) test -count=1 -timeout 30m -run 'TestConcurrentInvocationsUnderTheEmulator$$' ./local/rie
	@cat bin/bench/floor.md bin/bench/tracing.md bin/bench/cache.md bin/bench/coldstart.md bin/bench/engine.md bin/bench/load.md bin/bench/loadfloor.md bin/bench/concurrency.md bin/bench/concurrency-rie.md
	@$(MAKE) --no-print-directory bench-powertools
	@echo "• the glance and the charts, from this run"
	@$(BENCHCHART) -dir bin/bench -doc "$(BENCH_DOC)" -svg $(BENCH_SVG)

# pkg/idem beside Powertools for AWS Lambda (TypeScript), on the same engine
# (make bench runs it too; alone, it leaves the glance and the charts as
# they are, which need every table of one run).
POWERTOOLS_ROUNDS ?= 5
POWERTOOLS_N ?= 100
bench-powertools: $(POWERTOOLS)
	@mkdir -p bin/bench
	@echo "• side by side with Powertools for AWS Lambda (TypeScript), on the same engine"
	POWERTOOLS_BENCH=1 POWERTOOLS_ROUNDS=$(POWERTOOLS_ROUNDS) POWERTOOLS_N=$(POWERTOOLS_N) BENCH_OUT=$(CURDIR)/bin/bench/powertools.md $(GO) test -count=1 -timeout 20m -run 'TestSideBySideWithPowertools$$' ./local/bench/powertools
	@cat bin/bench/powertools.md

# The Promela models (the protocol, the client, the queue), checked by
# spin: make test runs the smaller runs and the negative controls; this adds
# the larger runs (MODEL_SIZE=big), make soak the largest. model_test.go
# lists them; spin prints each one's size.
model:
	@local/ensure-spin.sh
	MODEL_SIZE=big $(GO) test -count=1 -timeout 30m -v -run TestModel ./pkg/idem/model

# For the SAM CLI: the engine (with the template's tables) and the provider
# simulator on SAM_BIND, and local/.run/sam-env.json pointing each function
# at them through SAM_HOST, this machine as SAM's containers see it:
# 127.0.0.1 with --docker-network host (Linux), host.docker.internal (Docker
# Desktop). Up until Ctrl-C.
SAM_BIND ?= 0.0.0.0
SAM_HOST ?= 127.0.0.1
sam-local-env:
	@local/ensure-dynamodb-local.sh
	$(GO) run ./local/cmd/samenv -bind $(SAM_BIND) -host $(SAM_HOST)

FN     ?= charge
EVENT  ?= events/charge-create.json
TIMES  ?= 1
invoke: build
	$(GO) run ./local/cmd/invoke -fn $(FN) -event $(EVENT) -times $(TIMES)

build:
	@for fn in $(FUNCTIONS); do \
	  $(LAMBDA_FLAGS) GOARCH=$(HOST_ARCH) $(GO) build $(LAMBDA_BUILD) -o bin/$$fn/bootstrap ./functions/$$fn && \
	  $(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o bin/arm64/$$fn/bootstrap ./functions/$$fn || exit 1; \
	  echo "built bin/$$fn/bootstrap ($(HOST_ARCH)) and bin/arm64/$$fn/bootstrap"; \
	done

# sam build runs these (BuildMethod: makefile), with ARTIFACTS_DIR set.
build-ChargeFunction:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/charge
build-OrderFunction:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/order
build-OrderStatsFunction:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/orderstats

deploy:
	sam build && sam deploy

clean:
	rm -rf bin local/.run .aws-sam
