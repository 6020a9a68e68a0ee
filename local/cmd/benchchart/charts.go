package main

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A chart is one SVG file of a run: name, and what it draws, with the run's
// caption (engine, machine, date) under its title.
type chart struct {
	name string
	draw func(s *source, caption string) (*plot.Plot, error)
}

var charts = []chart{
	{"latency-floor.svg", latencyBesideFloor},
	{"latency-powertools.svg", latencyBesidePowertools},
	{"throughput.svg", throughputByInvocations},
	{"concurrency.svg", achievedByInvocations},
}

// Okabe and Ito's colours, which read apart in every common colour
// blindness: each path in one hue, its floor in a lighter one.
var (
	blue      = color.RGBA{0x00, 0x72, 0xb2, 0xff}
	skyBlue   = color.RGBA{0x56, 0xb4, 0xe9, 0xff}
	vermilion = color.RGBA{0xd5, 0x5e, 0x00, 0xff}
	orange    = color.RGBA{0xe6, 0x9f, 0x00, 0xff}
	green     = color.RGBA{0x00, 0x9e, 0x73, 0xff}
	grey      = color.RGBA{0x99, 0x99, 0x99, 0xff}
)

const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 3.8 * vg.Inch
)

// caption is the line under every chart's title.
func caption(s *source, info runInfo) string {
	return fmt.Sprintf("%s · %s · make bench, %s", s.engine(), info.Machine, info.Started.UTC().Format("2006-01-02"))
}

// drawCharts renders every chart as SVG, by file name.
func drawCharts(s *source, info runInfo) (map[string][]byte, error) {
	// Liberation Sans has Arial's metrics: a reader without it gets Arial
	// or Helvetica (svgFonts), laid out as drawn.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
	c := caption(s, info)
	out := map[string][]byte{}
	for _, ch := range charts {
		p, err := ch.draw(s, c)
		if err != nil || s.err != nil {
			return nil, fmt.Errorf("%s: %w", ch.name, firstErr(s.err, err))
		}
		w, err := p.WriterTo(chartWidth, chartHeight, "svg")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ch.name, err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			return nil, fmt.Errorf("%s: %w", ch.name, err)
		}
		out[ch.name] = svgFonts(b.Bytes())
	}
	return out, nil
}

// svgFonts names fallbacks after the font gonum writes, which it does not
// embed.
func svgFonts(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"), []byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;"))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// A series is one bar or line of a chart: its name, colour, values.
type series struct {
	name   string
	color  color.Color
	dashed bool
	values []float64
}

func newPlot(title, caption, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title + "\n" + caption
	p.Title.TextStyle.Font.Size = 10
	p.Title.Padding = vg.Points(6)
	p.Y.Label.Text = ylabel
	p.Y.Label.TextStyle.Font.Size = 9
	p.X.Label.TextStyle.Font.Size = 9
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = 9
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	return p
}

// bars draws series side by side in each group, each bar with its value.
func bars(p *plot.Plot, groups []string, ss []series) error {
	width := min(vg.Points(28), chartWidth*0.6/vg.Length(len(groups)*len(ss)))
	top := 0.0
	for i, s := range ss {
		b, err := plotter.NewBarChart(plotter.Values(s.values), width)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		b.Color, b.LineStyle.Width = s.color, 0
		b.Offset = vg.Length(float64(i)-float64(len(ss)-1)/2) * width
		labels, err := valueLabels(s.values, b.Offset)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		p.Add(b, labels)
		p.Legend.Add(s.name, b)
		top = max(top, slices.Max(s.values))
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	p.Y.Max = top * 1.35 // room for the legend
	return nil
}

// valueLabels writes each value above its bar.
func valueLabels(values []float64, offset vg.Length) (*plotter.Labels, error) {
	xys := plotter.XYLabels{}
	for i, v := range values {
		xys.XYs = append(xys.XYs, plotter.XY{X: float64(i), Y: v})
		xys.Labels = append(xys.Labels, strconv.FormatFloat(v, 'f', 2, 64))
	}
	l, err := plotter.NewLabels(xys)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = 6.5
		l.TextStyle[i].XAlign = draw.XCenter
	}
	l.Offset = vg.Point{X: offset, Y: vg.Points(2)}
	return l, nil
}

// lines draws each series against xs, which are evenly spaced whatever
// their values (1, 8, 32, 64): a log scale would do as well but for
// gonum's axis label, which it centres on the values' arithmetic mean.
func lines(p *plot.Plot, xs []float64, ss []series) error {
	var ticks []plot.Tick
	for i, x := range xs {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.3, float64(len(xs)-1)+0.3
	top := 0.0
	for _, s := range ss {
		xys := make(plotter.XYs, len(xs))
		for i := range xs {
			xys[i] = plotter.XY{X: float64(i), Y: s.values[i]}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		l.Color, pts.Color, l.Width = s.color, s.color, vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
		top = max(top, slices.Max(s.values))
	}
	p.Y.Max = top * 1.35
	return nil
}

// latencyBesideFloor is each case the floor times: each path beside the
// same calls made bare.
func latencyBesideFloor(s *source, caption string) (*plot.Plot, error) {
	p := newPlot("ms per request: pkg/idem beside its floor, the same DynamoDB calls made bare (lower is faster)", caption, "ms per request (median over rounds)")
	var groups []string
	ss := []series{{name: "Do", color: blue}, {name: "Do's floor", color: skyBlue}, {name: "DoAtomic", color: vermilion}, {name: "DoAtomic's floor", color: orange}}
	for _, c := range latencyCases {
		groups = append(groups, short(c.label))
		for i, path := range paths {
			key := path + ": " + c.floor
			ss[2*i].values = append(ss[2*i].values, s.num(floor, colLibMs, key))
			ss[2*i+1].values = append(ss[2*i+1].values, s.num(floor, colFloorMs, key))
		}
	}
	return p, bars(p, groups, ss)
}

// latencyBesidePowertools is each case the side by side times.
func latencyBesidePowertools(s *source, caption string) (*plot.Plot, error) {
	p := newPlot("ms per request: pkg/idem beside Powertools for AWS Lambda (TypeScript), through one counting proxy", caption, "ms per request (median over rounds)")
	var groups []string
	ss := []series{{name: "pkg/idem Do", color: blue}, {name: "pkg/idem DoAtomic", color: vermilion}, {name: "Powertools", color: green}}
	libs := []string{libDo, libAtomic, libPT}
	for _, c := range latencyCases {
		if c.side == "" {
			continue
		}
		groups = append(groups, short(c.label))
		for i, lib := range libs {
			ss[i].values = append(ss[i].values, s.num(sideBySide, colSideMs, c.side, lib))
		}
	}
	return p, bars(p, groups, ss)
}

// throughputByInvocations is requests/s by invocations at once in one
// execution environment, in process and under the emulator.
func throughputByInvocations(s *source, caption string) (*plot.Plot, error) {
	p := newPlot("POST /orders, one execution environment: requests/s by invocations at once", caption, "requests/s")
	p.X.Label.Text = "invocations at once (AWS_LAMBDA_MAX_CONCURRENCY)"
	xs := levels(s, inProcess)
	ss := []series{
		{name: "Do, in process", color: blue, values: byLevel(s, inProcess, colRate, "Do", xs)},
		{name: "DoAtomic, in process", color: vermilion, values: byLevel(s, inProcess, colRate, "DoAtomic", xs)},
		{name: "Do, under the Runtime Interface Emulator", color: blue, dashed: true, values: byLevel(s, emulator, colRate, "Do", xs)},
		{name: "DoAtomic, under the Runtime Interface Emulator", color: vermilion, dashed: true, values: byLevel(s, emulator, colRate, "DoAtomic", xs)},
	}
	return p, lines(p, xs, ss)
}

// achievedByInvocations is how many invocations overlapped, beside how
// many were asked for.
func achievedByInvocations(s *source, caption string) (*plot.Plot, error) {
	p := newPlot("Achieved concurrency (the invocations' time over the row's) by invocations at once", caption, "achieved concurrency")
	p.X.Label.Text = "invocations at once (AWS_LAMBDA_MAX_CONCURRENCY)"
	xs := levels(s, emulator)
	ss := []series{{name: "as many as asked", color: grey, dashed: true, values: xs}}
	if s.has(inProcess, colAchieved) {
		ss = append(ss, series{name: "Do, in process", color: blue, values: byLevel(s, inProcess, colAchieved, "Do", xs)},
			series{name: "DoAtomic, in process", color: vermilion, values: byLevel(s, inProcess, colAchieved, "DoAtomic", xs)})
	}
	ss = append(ss, series{name: "Do, under the Runtime Interface Emulator", color: blue, dashed: true, values: byLevel(s, emulator, colAchieved, "Do", xs)},
		series{name: "DoAtomic, under the Runtime Interface Emulator", color: vermilion, dashed: true, values: byLevel(s, emulator, colAchieved, "DoAtomic", xs)})
	return p, lines(p, xs, ss)
}

// levels are the invocations at once of r's table, in order.
func levels(s *source, r ref) []float64 {
	var xs []float64
	for _, k := range s.keys(r, colRate) {
		if n, err := strconv.Atoi(k[0]); err == nil && !slices.Contains(xs, float64(n)) {
			xs = append(xs, float64(n))
		}
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		s.fail("%s: no row of invocations at once", r.file)
		return []float64{1}
	}
	return xs
}

func byLevel(s *source, r ref, col, path string, xs []float64) []float64 {
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = s.num(r, col, strconv.FormatFloat(x, 'f', -1, 64), path)
	}
	return ys
}

// short is a case's label on a chart's axis, on two lines.
func short(label string) string {
	if label == "replay of a completed request" {
		return "replay"
	}
	label = strings.Replace(label, ", ", "\n", 1)
	return strings.Replace(label, ": ", "\n", 1)
}
