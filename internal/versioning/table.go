package versioning

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes runs as one table per workflow type: a row for the DefaultVersion branch
// of each change, whether it is retirable, and a row per version, under a header naming the
// namespace and its retention.
func WriteTable(w io.Writer, namespace string, retention time.Duration, runs []Runs) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Temporal namespace %q: closed runs stay in visibility for %s (its retention).\n", namespace, days(retention))
	b.WriteString("A DefaultVersion branch is retirable when no run in visibility, running or closed, is on it.\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "\n%s: %d runs in visibility, %d running\n", r.Type, r.Total.All, r.Total.Running)
		table := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(table, "CHANGE\tASKED\tVERSION\tRUNS\tRUNNING\tRETIRABLE")
		for _, c := range r.Changes {
			asked, bound := "at start", ""
			if !c.Change.AtStart {
				// Runs without the marker may not have reached the call yet.
				asked, bound = "lazily", "at most "
			}
			fmt.Fprintf(table, "%s\t%s\tDefaultVersion\t%s%d\t%s%d\t%s\n",
				c.Change.ID, asked, bound, c.Default.All, bound, c.Default.Running, yesNo(c.Retirable()))
			for i, v := range c.Versions {
				fmt.Fprintf(table, "%s\t%s\t%d\t%d\t%d\t\n", c.Change.ID, asked, i+1, v.All, v.Running)
			}
		}
		if err := table.Flush(); err != nil {
			return err
		}
	}
	// A version row leaves RETIRABLE empty: no padding after its last count.
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		out.WriteString(strings.TrimRight(line, " \n") + "\n")
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// days writes a retention of whole days in days, as namespaces are usually configured.
func days(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}

func yesNo(yes bool) string {
	if yes {
		return "yes"
	}
	return "no"
}
