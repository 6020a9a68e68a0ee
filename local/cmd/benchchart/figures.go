package main

// The tables of a make bench run that the glance and the charts read, by
// file and key columns, and the columns they read, named as the bench
// tests write them: a test that renames one makes benchchart fail, naming
// the file and the column, rather than show another figure.
var (
	sideBySide   = ref{"powertools.md", []string{"case", "library"}, ""}
	race         = ref{"powertools.md", []string{"library"}, colRaceRuns}
	holder       = ref{"powertools.md", []string{"library"}, colHolderGot}
	otherBody    = ref{"powertools.md", []string{"library"}, colOtherBody}
	floor        = ref{"floor.md", []string{"case"}, ""}
	atomicReplay = ref{"floor.md", []string{"path"}, ""}
	cache        = ref{"cache.md", []string{"replay"}, ""}
	load         = ref{"load.md", []string{"handler"}, ""}
	loadCPU      = ref{"loadfloor.md", []string{"way"}, ""}
	inProcess    = ref{"concurrency.md", []string{"invocations at once", "path"}, ""}
	emulator     = ref{"concurrency-rie.md", []string{"invocations at once", "path"}, ""}
	coldStart    = ref{"coldstart.md", []string{"function"}, ""}
)

const (
	// powertools.md
	colSideCalls  = "DynamoDB calls per request"
	colSideRuns   = "handler runs per request"
	colSideMs     = "ms per request"
	colVsPT       = "vs Powertools"
	colRaceRuns   = "executions of the handler"
	colOrders     = "committed orders"
	colRaceAnswer = "answers (last round)"
	colHolderGot  = "the holder got"
	colReplayGets = "a replay afterwards returns"
	colOtherBody  = "other body"
	// floor.md
	colFloorCalls = "DynamoDB calls per request (both sides, asserted)"
	colLibMs      = "library ms per request"
	colFloorMs    = "floor ms per request"
	colOverFloor  = "library over floor, mean per round: median (min–max over rounds)"
	colReplayMs   = "replay, ms"
	colReplayCall = "replay's calls"
	// cache.md
	colCacheCalls = "DynamoDB calls per replay"
	colCacheUs    = "µs per replay (median over rounds)"
	// load.md, loadfloor.md
	colRate       = "requests/s"
	colHandlerUs  = "the handler's, µs per request"
	colHandlerOvr = "the handler's over the other's"
	// concurrency.md, concurrency-rie.md
	colP50      = "p50 ms"
	colAchieved = "achieved concurrency"
	// coldstart.md
	colColdMs   = "process start to first response, median of 10"
	colBootSize = "bootstrap (linux/amd64, stripped)"
)

// The rows' names in those tables.
const (
	libDo         = "pkg/idem Do"
	libAtomic     = "pkg/idem DoAtomic"
	libPT         = "Powertools"
	ptDefault     = "Powertools (default: no payload validation)"
	ptValidating  = "Powertools with payloadValidationJmesPath: body"
	withCache     = "with the cache"
	atomicCached  = "DoAtomic, replay from Options.Cache (same execution environment)"
	plainHandler  = "plain"
	coldBaseline  = "baseline: lambda.Start, nothing else"
	coldFunction  = "OrderFunction"
	controlSuffix = " floor, again"
)

// paths are the library's two, as the floor's and the load's tables name
// them.
var paths = []string{"Do", "DoAtomic"}

// A latencyCase is a row of the glance that both the floor and (where side
// is set) the side-by-side run time.
type latencyCase struct {
	label string
	side  string // powertools.md's case, "" where it has none
	floor string // floor.md's case, after "Do: " or "DoAtomic: "
	// powertools says what Powertools does where the side by side does not
	// time it.
	powertools func(*source) string
}

var latencyCases = []latencyCase{
	{label: "first request, no business write", side: "first request, no business write", floor: "first request, no business write"},
	{label: "first request, one business write", side: "first request, one business write", floor: "first request, one business write"},
	{label: "replay of a completed request", side: "replay of a completed request", floor: "replay"},
	{label: "409: in progress", floor: "409 in progress", powertools: func(s *source) string {
		return "not timed; in a race it answers " + refusals(s.cell(race, colRaceAnswer, libPT))
	}},
	{label: "422: another body", floor: "422 other request", powertools: func(s *source) string {
		return "not timed; by default " + before(s.cell(otherBody, colOtherBody, ptDefault), ":") +
			"; with payloadValidationJmesPath, " + s.cell(otherBody, colOtherBody, ptValidating)
	}},
}
