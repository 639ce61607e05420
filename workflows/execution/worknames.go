package execution

import "slices"

// The Work names a pass applies: pending ones held as a list and a set, retries, and the
// versions the signals carried.

// retryNames are the Works to apply again after a failure; "*" (a failed full pass) is left to
// the next full pass.
func retryNames(failed []string) []string {
	return slices.DeleteFunc(slices.Clone(failed), func(s string) bool { return s == "*" })
}

// addNames appends to names those of more it does not hold yet, each once.
func addNames(names []string, more []string) []string {
	w := newWorkNames(names)
	w.add(more)
	return w.list
}

// workNames are Work names in the order they were named, and the set of them, so that adding
// a name costs the same however many are held: a scan of the list made a batch of n names cost
// O(n²), over a second for 20,000, which Temporal's deadlock detector fails.
type workNames struct {
	list []string
	has  map[string]bool
}

// newWorkNames holds names as they are, repeated ones included: a run continued with a
// repeated name applies it as the run before would have.
func newWorkNames(names []string) *workNames {
	w := &workNames{list: slices.Clone(names), has: make(map[string]bool, len(names))}
	for _, name := range names {
		w.has[name] = true
	}
	return w
}

// add appends the names not held yet, each once.
func (w *workNames) add(names []string) {
	for _, name := range names {
		if name != "" && !w.has[name] {
			w.list = append(w.list, name)
			w.has[name] = true
		}
	}
}

// extend appends names as they are, as the retry of failed Works always has.
func (w *workNames) extend(names []string) {
	w.list = append(w.list, names...)
	for _, name := range names {
		w.has[name] = true
	}
}

// versionsOf picks the versions of names (nil when there are none).
func versionsOf(versions map[string]string, names []string) map[string]string {
	var out map[string]string
	for _, name := range names {
		if v, ok := versions[name]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}
