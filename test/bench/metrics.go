package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is one scrape of a process's /metrics.
type Snapshot map[string]*dto.MetricFamily

// Scrape reads http://<address>/metrics.
func Scrape(ctx context.Context, address string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", address, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", address, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics of %s: %w", address, err)
	}
	return families, nil
}

// ignoredLabels are the same on every series of a process and only widen the tables; labels
// whose value is "none" (the SDK's placeholder) are left out too.
var ignoredLabels = []string{"otel_scope_name", "otel_scope_version", "otel_scope_schema_url",
	"namespace", "task_queue", "client_name", "service_name"}

func seriesKey(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		if !slices.Contains(ignoredLabels, l.GetName()) && l.GetValue() != "none" {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// HistogramDelta is what one histogram series observed between two scrapes.
type HistogramDelta struct {
	Name, Labels string
	Count        uint64
	Sum          float64
	bounds       []float64 // upper bounds, ascending, without +Inf
	cumulative   []uint64  // cumulative counts per bound
}

// Mean is the average observation in seconds.
func (h HistogramDelta) Mean() float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	return h.Sum / float64(h.Count)
}

// Quantile estimates the q-quantile by linear interpolation inside the bucket that holds it,
// the way Prometheus's histogram_quantile does. Above the highest finite bound it answers
// that bound (prefixed ">" by FormatSeconds' caller via Above).
func (h HistogramDelta) Quantile(q float64) (value float64, above bool) {
	if h.Count == 0 {
		return math.NaN(), false
	}
	rank := q * float64(h.Count)
	lower, below := 0.0, uint64(0)
	for i, bound := range h.bounds {
		if float64(h.cumulative[i]) >= rank {
			inBucket := h.cumulative[i] - below
			if inBucket == 0 {
				return bound, false
			}
			return lower + (bound-lower)*(rank-float64(below))/float64(inBucket), false
		}
		lower, below = bound, h.cumulative[i]
	}
	return lower, true
}

// HistogramDeltas returns, for every histogram whose name starts with one of prefixes, the
// series that observed something between before and after, sorted by name and labels.
func HistogramDeltas(before, after Snapshot, prefixes ...string) []HistogramDelta {
	var out []HistogramDelta
	for name, family := range after {
		if family.GetType() != dto.MetricType_HISTOGRAM || !hasPrefix(name, prefixes) || isAttempt(name) {
			continue
		}
		old := map[string]*dto.Histogram{}
		if f := before[name]; f != nil {
			for _, m := range f.GetMetric() {
				old[seriesKey(m)] = m.GetHistogram()
			}
		}
		for _, m := range family.GetMetric() {
			h := m.GetHistogram()
			key := seriesKey(m)
			prev := old[key]
			d := HistogramDelta{Name: name, Labels: key, Count: h.GetSampleCount() - prev.GetSampleCount(), Sum: h.GetSampleSum() - prev.GetSampleSum()}
			if d.Count == 0 {
				continue
			}
			prevBuckets := map[float64]uint64{}
			for _, b := range prev.GetBucket() {
				prevBuckets[b.GetUpperBound()] = b.GetCumulativeCount()
			}
			for _, b := range h.GetBucket() {
				if math.IsInf(b.GetUpperBound(), 1) {
					continue
				}
				d.bounds = append(d.bounds, b.GetUpperBound())
				d.cumulative = append(d.cumulative, b.GetCumulativeCount()-prevBuckets[b.GetUpperBound()])
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b HistogramDelta) int {
		return strings.Compare(a.Name+"{"+a.Labels, b.Name+"{"+b.Labels)
	})
	return out
}

// CounterDelta is how much one counter series grew between two scrapes.
type CounterDelta struct {
	Name, Labels string
	Value        float64
}

// CounterDeltas returns the counters whose name starts with one of prefixes and that grew.
func CounterDeltas(before, after Snapshot, prefixes ...string) []CounterDelta {
	var out []CounterDelta
	for name, family := range after {
		if family.GetType() != dto.MetricType_COUNTER || !hasPrefix(name, prefixes) || isAttempt(name) {
			continue
		}
		old := map[string]float64{}
		if f := before[name]; f != nil {
			for _, m := range f.GetMetric() {
				old[seriesKey(m)] = m.GetCounter().GetValue()
			}
		}
		for _, m := range family.GetMetric() {
			key := seriesKey(m)
			if v := m.GetCounter().GetValue() - old[key]; v > 0 {
				out = append(out, CounterDelta{Name: name, Labels: key, Value: v})
			}
		}
	}
	slices.SortFunc(out, func(a, b CounterDelta) int {
		return strings.Compare(a.Name+"{"+a.Labels, b.Name+"{"+b.Labels)
	})
	return out
}

// isAttempt tells the SDK's per-attempt twins of request metrics, equal to them without retries.
func isAttempt(name string) bool { return strings.Contains(name, "_attempt") }

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// histogramTable renders histogram deltas as a Markdown table.
func histogramTable(deltas []HistogramDelta) string {
	if len(deltas) == 0 {
		return "(no observations)\n"
	}
	rows := [][]string{}
	for _, d := range deltas {
		q := func(p float64) string {
			v, above := d.Quantile(p)
			s := FormatSeconds(v)
			if above {
				s = ">" + s
			}
			return s
		}
		labels := d.Labels
		if labels == "" {
			labels = "-"
		}
		rows = append(rows, []string{d.Name, labels, fmt.Sprint(d.Count), FormatSeconds(d.Mean()), q(0.5), q(0.9), q(0.99)})
	}
	return table([]string{"histogram", "labels", "count", "mean", "~p50", "~p90", "~p99"}, rows)
}

// counterTable renders counter deltas as a Markdown table.
func counterTable(deltas []CounterDelta) string {
	if len(deltas) == 0 {
		return "(none grew)\n"
	}
	rows := [][]string{}
	for _, d := range deltas {
		labels := d.Labels
		if labels == "" {
			labels = "-"
		}
		rows = append(rows, []string{d.Name, labels, trimFloat(d.Value)})
	}
	return table([]string{"counter", "labels", "increase"}, rows)
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
