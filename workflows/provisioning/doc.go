// Package provisioning holds the decisions of installing a Karmada control plane: one entity
// workflow per Karmada object runs the install as the ordered step list of the spec, each
// step an activity of the same name. It records which steps succeeded with which inputs, so
// a failure resumes at the failed step and a spec change re-runs only the steps it affects;
// it pauses while the object is suspended and removes what it installed when the object goes.
package provisioning
