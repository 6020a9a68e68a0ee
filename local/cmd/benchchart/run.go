package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// runFile is where a run's start is recorded, in its output directory.
const runFile = "run.json"

// A runInfo is what make bench records of its own run: when it began and
// ended, on what machine, with which toolchains, and how loaded the machine
// was when it began (the figures are only worth their machine's quiet).
type runInfo struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Machine  string    `json:"machine"`
	Go       string    `json:"go"`
	Node     string    `json:"node,omitempty"`
	// LoadAtStart is the one-minute load average when the run began.
	LoadAtStart *float64 `json:"load_at_start,omitempty"`
}

func readRun(dir string) (runInfo, error) {
	var info runInfo
	b, err := os.ReadFile(filepath.Join(dir, runFile))
	if err != nil {
		return info, fmt.Errorf("%w: %w (make bench writes it first, with benchchart -start)", errBench, err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%w: %s: %w", errBench, runFile, err)
	}
	if info.Started.IsZero() || info.Machine == "" {
		return info, fmt.Errorf("%w: %s names no start or no machine", errBench, runFile)
	}
	return info, nil
}

func writeRun(dir string, info runInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, runFile), append(b, '\n'), 0o644)
}

// thisMachine describes the machine the program runs on, from /proc where
// there is one: "2 vCPU (AMD EPYC, virtual), 24 GiB, Linux".
func thisMachine() string {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	meminfo, _ := os.ReadFile("/proc/meminfo")
	return describeMachine(runtime.NumCPU(), string(cpuinfo), string(meminfo), runtime.GOOS)
}

var (
	modelName = regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`)
	memTotal  = regexp.MustCompile(`(?m)^MemTotal:\s*([0-9]+) kB`)
	trademark = regexp.MustCompile(`\((R|TM|tm)\)`)
	// A processor under a hypervisor says so in its flags.
	virtual = regexp.MustCompile(`(?m)^flags\s*:.*\bhypervisor\b`)
)

func describeMachine(cpus int, cpuinfo, meminfo, goos string) string {
	cpu := fmt.Sprintf("%d CPU", cpus)
	var about []string
	if m := modelName.FindStringSubmatch(cpuinfo); m != nil {
		about = append(about, strings.Join(strings.Fields(trademark.ReplaceAllString(m[1], "")), " "))
	}
	if virtual.MatchString(cpuinfo) {
		cpu = fmt.Sprintf("%d vCPU", cpus)
		about = append(about, "virtual")
	}
	if len(about) > 0 {
		cpu += " (" + strings.Join(about, ", ") + ")"
	}
	parts := []string{cpu}
	if m := memTotal.FindStringSubmatch(meminfo); m != nil {
		kb, _ := strconv.ParseFloat(m[1], 64)
		parts = append(parts, fmt.Sprintf("%.0f GiB", kb/(1<<20)))
	}
	system := goos
	if goos == "linux" {
		system = "Linux"
	}
	return strings.Join(append(parts, system), ", ")
}

// loadAverage is the one-minute load average, where /proc says it.
func loadAverage() *float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return nil
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return nil
	}
	return &v
}

// wall is how long the run took, as "10 min 49 s".
func (r runInfo) wall() string {
	d := r.Finished.Sub(r.Started).Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// versions is "Go 1.26.8, Node.js 20.20.2".
func (r runInfo) versions() string {
	v := "Go " + strings.TrimPrefix(r.Go, "go")
	if r.Node != "" {
		v += ", Node.js " + strings.TrimPrefix(r.Node, "v")
	}
	return v
}
