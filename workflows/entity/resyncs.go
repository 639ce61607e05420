package entity

import "go.temporal.io/sdk/workflow"

// Resyncs is an entity workflow's resync signal channel. It records a wake itself (IsWake: the
// run is asked to move to the worker deployment's current version) and hands the payload of
// every other resync to the workflow.
type Resyncs struct {
	channel      workflow.ReceiveChannel
	upgradeAsked bool
}

// NewResyncs is the resync channel of the signal name.
func NewResyncs(ctx workflow.Context, name string) *Resyncs {
	return &Resyncs{channel: workflow.GetSignalChannel(ctx, name)}
}

// Drain takes every resync already received, without blocking, handing each that is no wake
// to resync (its payload: nil when it has none or does not decode).
func (r *Resyncs) Drain(resync func(payload any)) {
	for r.take(resync) {
	}
}

// AddTo makes sel take one resync as Drain does when it selects the channel.
func (r *Resyncs) AddTo(sel workflow.Selector, resync func(payload any)) {
	sel.AddReceive(r.channel, func(workflow.ReceiveChannel, bool) { r.take(resync) })
}

// Len is the number of resyncs received and not yet taken.
func (r *Resyncs) Len() int { return r.channel.Len() }

// UpgradeAsked tells whether a wake asked the run to move to the current version.
func (r *Resyncs) UpgradeAsked() bool { return r.upgradeAsked }

func (r *Resyncs) take(resync func(payload any)) bool {
	var payload any
	if !r.channel.ReceiveAsync(&payload) {
		return false
	}
	if IsWake(payload) {
		r.upgradeAsked = true
	} else {
		resync(payload)
	}
	return true
}
