package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Report collects the benchmark's Markdown report section by section, and its key figures.
type Report struct {
	mu        sync.Mutex
	b         strings.Builder
	headlines []Figure
}

// Figure is one key figure of a run.
type Figure struct{ Name, Value string }

// Headline records a key figure, for a summary that compares runs.
func (r *Report) Headline(name, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headlines = append(r.headlines, Figure{name, value})
}

// Headlines are the key figures recorded so far, in order.
func (r *Report) Headlines() []Figure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.headlines)
}

// Heading starts a section (level 2) or subsection (level 3).
func (r *Report) Heading(level int, title string) {
	r.Printf("\n%s %s\n\n", strings.Repeat("#", level), title)
}

// Printf appends formatted text.
func (r *Report) Printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.b, format, args...)
}

// Table appends a Markdown table.
func (r *Report) Table(headers []string, rows [][]string) {
	r.Printf("%s", table(headers, rows))
}

// Code appends a fenced block of preformatted text.
func (r *Report) Code(text string) {
	r.Printf("\n```\n%s\n```\n", strings.TrimRight(text, "\n"))
}

// String is the report so far.
func (r *Report) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

func table(headers []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(headers, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(headers)) + "\n")
	for _, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

// FormatSeconds prints a duration given in seconds with a unit that fits it.
func FormatSeconds(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return FormatDuration(time.Duration(s * float64(time.Second)))
}

// FormatDuration prints d as ms below 10 s (with 1 decimal below 100 ms), else in seconds.
func FormatDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
}

// Summary is the distribution of a set of durations.
type Summary struct {
	N                        int
	Mean, P50, P90, P99, Max time.Duration
}

// Summarize computes nearest-rank percentiles of ds.
func Summarize(ds []time.Duration) Summary {
	s := Summary{N: len(ds)}
	if len(ds) == 0 {
		return s
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return sorted[min(max(i, 0), len(sorted)-1)]
	}
	s.Mean = total / time.Duration(len(sorted))
	s.P50, s.P90, s.P99, s.Max = rank(0.5), rank(0.9), rank(0.99), sorted[len(sorted)-1]
	return s
}

// cells renders p50, p90, p99, max and mean, or dashes when there is nothing.
func (s Summary) cells() []string {
	if s.N == 0 {
		return []string{"-", "-", "-", "-", "-"}
	}
	return []string{FormatDuration(s.P50), FormatDuration(s.P90), FormatDuration(s.P99), FormatDuration(s.Max), FormatDuration(s.Mean)}
}
