package mcs

import (
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
)

// Which worker's Work cache shows every write the workflow made to its Works: the activities
// report their cache, and the workflow tells the next ones (act.EarlierWrites.WorkCache).
// A worker that replays the workflow (it left the worker's workflow cache, or continued as
// new) then reads the Works from its Work cache rather than listing them from the API server.

// workCacheReports is what one reconcile learnt of the Work caches its activities used.
type workCacheReports struct {
	// task is the workflow task the reconcile began in (the history length then).
	task int
	// reported is the Work cache the activities' results named; differ that two named
	// different ones, or one none.
	reported string
	differ   bool
	// wrote: the reconcile ran a step that writes Works; unreported: one of them failed, so
	// its result, and the cache it wrote through, is unknown.
	wrote, unreported bool
}

// beginWorkCacheReports starts the reports of a reconcile.
func (r *reconciler) beginWorkCacheReports(ctx workflow.Context) {
	r.reports = workCacheReports{task: workflow.GetInfo(ctx).GetCurrentHistoryLength()}
}

// reportWorkCache records the Work cache an activity's result named.
func (r *reconciler) reportWorkCache(workCache string) {
	switch {
	case workCache == "" || r.reports.reported != "" && r.reports.reported != workCache:
		r.reports.differ = true
	default:
		r.reports.reported = workCache
	}
}

// reportWrite records a step that writes Works: the Work cache its result named, or, when it
// failed (err), that its cache is unknown.
func (r *reconciler) reportWrite(workCache string, err error) {
	r.reports.wrote = true
	if err != nil {
		r.reports.unreported = true
		return
	}
	r.reportWorkCache(workCache)
}

// settleWorkCache decides, at the end of a reconcile, which Work cache shows every write so
// far. A reconcile that wrote nothing changes nothing. One whose writing steps all named the
// same cache, as did every other step that reported one, wrote through that cache; so did one
// that ran within a single workflow task, where every local activity runs in one worker
// process, whatever its steps' failures. Its reads began from the API server unless the
// cache named before was its own. Otherwise (steps on two workers, an agent that wrote, a
// failed step in a reconcile that spanned tasks) no cache is named, and the next reads go by
// OthersWroteBefore.
func (r *reconciler) settleWorkCache(ctx workflow.Context) {
	rep := r.reports
	oneTask := rep.task == workflow.GetInfo(ctx).GetCurrentHistoryLength()
	switch {
	case !rep.wrote:
	case rep.reported != "" && !rep.differ && (oneTask || !rep.unreported):
		r.workCache = rep.reported
	default:
		r.workCache = ""
	}
}

// withoutWorkCache is obs without the Work cache of the worker that observed, which is not
// part of what it observed.
func withoutWorkCache(obs act.Observation) act.Observation {
	obs.WorkCache = ""
	return obs
}

// earlierWrites is what the next activity that reads the Works is told of the writes before
// it: until when other workers may have written them, and which Work cache shows them all.
func (r *reconciler) earlierWrites() act.EarlierWrites {
	return act.EarlierWrites{OthersWroteBefore: r.othersWroteBefore, WorkCache: r.workCache}
}
