package provisioning

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// What a Karmada's spec may ask of the nodes its pods run on. The worker creates the pods of
// an instance with its own rights, so whoever may write a Karmada would otherwise choose pods
// that reach the host cluster's nodes: a directory of the node mounted read-write, a
// privileged sidecar, added capabilities, a port of the node. A spec reaches the pods through
// the API server's extraVolumes and sidecarContainers, a local etcd's volumeData.hostPath and
// every component's annotations (AppArmor's); its labels, resources, tolerations, affinity and
// priority class ask nothing of a node's security. What Pod Security's baseline profile
// forbids there is refused, and so are privilege escalation (restricted's rule) and volumes
// other than those restricted allows, unless the namespace is one the operator allows.

// HostAccess is the operator's allowance of pods that reach their node.
type HostAccess struct {
	// Namespaces are those whose Karmadas may ask for host access; none by default.
	Namespaces []string
}

// hostAccessFlag is the worker's flag that sets HostAccess.Namespaces.
const hostAccessFlag = "--host-access-namespaces"

// allowedVolumes are the kinds of volume a Karmada may add without host access: those of Pod
// Security's restricted profile, which reach neither the node's files nor storage the node
// mounts from an address the spec gives.
var allowedVolumes = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret"}

// allowedSELinuxTypes are the SELinux types Pod Security's baseline profile allows.
var allowedSELinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// appArmorAnnotationPrefix is the annotation that sets a container's AppArmor profile.
const appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// CheckSpec returns, as "<field>: <problem>", each thing k's spec asks of its pods' nodes,
// unless k's namespace is allowed host access.
func (h HostAccess) CheckSpec(k *operatorv1alpha1.Karmada) []string {
	if slices.Contains(h.Namespaces, k.Namespace) {
		return nil
	}
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s, which only the Karmadas of the namespaces in the worker's %s may ask for (not %s)",
			field, fmt.Sprintf(format, args...), hostAccessFlag, k.Namespace))
	}

	const apiField = "spec.components.karmadaAPIServer"
	api := apiServerSpec(k)
	for i, v := range api.ExtraVolumes {
		field := fmt.Sprintf("%s.extraVolumes[%d]", apiField, i)
		switch kind := volumeKind(v.VolumeSource); {
		case kind == "hostPath":
			add(field+".hostPath", "mounts the node's directory %s", v.HostPath.Path)
		case !slices.Contains(allowedVolumes, kind):
			add(field, "is a %s volume, which the node mounts itself (only %s volumes need no host access)", kind, strings.Join(allowedVolumes, ", "))
		}
	}
	for i, c := range api.SidecarContainers {
		containerAccess(fmt.Sprintf("%s.sidecarContainers[%d]", apiField, i), c, add)
	}
	if c := k.Spec.Components; c != nil && c.Etcd != nil && c.Etcd.Local != nil && c.Etcd.Local.VolumeData != nil {
		if p := c.Etcd.Local.VolumeData.HostPath; p != nil {
			add("spec.components.etcd.local.volumeData.hostPath", "keeps etcd's data in the node's directory %s, which may hold the node's files or another instance's data", p.Path)
		}
	}
	for _, comp := range append([]Component{Etcd, APIServer, AggregatedAPIServer}, Components...) {
		s := SettingsOf(k, comp)
		if !s.Set {
			continue
		}
		field := "spec.components." + comp.Field
		if comp.Field == Etcd.Field {
			field += ".local"
		}
		for _, key := range slices.Sorted(maps.Keys(s.Common.Annotations)) {
			if value := s.Common.Annotations[key]; strings.HasPrefix(key, appArmorAnnotationPrefix) &&
				value != "runtime/default" && !strings.HasPrefix(value, "localhost/") {
				add(field+".annotations", "%s is %q, which lifts the container's AppArmor confinement", key, value)
			}
		}
	}
	return problems
}

// containerAccess reports, through add, what container c (of field) asks of its node.
func containerAccess(field string, c corev1.Container, add func(field, format string, args ...any)) {
	for j, p := range c.Ports {
		if p.HostPort != 0 {
			add(fmt.Sprintf("%s.ports[%d].hostPort", field, j), "binds the node's port %d", p.HostPort)
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		return
	}
	field += ".securityContext"
	if sc.Privileged != nil && *sc.Privileged {
		add(field+".privileged", "is true: the container would hold every device and capability of the node")
	}
	if sc.AllowPrivilegeEscalation != nil && *sc.AllowPrivilegeEscalation {
		add(field+".allowPrivilegeEscalation", "is true: the container's processes could gain privileges it does not start with")
	}
	if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		add(field+".capabilities.add", "adds %v to the container runtime's default capabilities", sc.Capabilities.Add)
	}
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		add(field+".procMount", "is %s: the container would see the node's /proc unmasked", *sc.ProcMount)
	}
	if o := sc.SELinuxOptions; o != nil && (o.User != "" || o.Role != "" || !slices.Contains(allowedSELinuxTypes, o.Type)) {
		add(field+".seLinuxOptions", "sets user %q, role %q and type %q: only the types %s are confined as containers", o.User, o.Role, o.Type,
			strings.Join(allowedSELinuxTypes[1:], ", "))
	}
	if p := sc.SeccompProfile; p != nil && p.Type == corev1.SeccompProfileTypeUnconfined {
		add(field+".seccompProfile.type", "is Unconfined: the container could make any system call of the node's kernel")
	}
	if p := sc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
		add(field+".appArmorProfile.type", "is Unconfined: the container would run without AppArmor confinement")
	}
	if o := sc.WindowsOptions; o != nil && o.HostProcess != nil && *o.HostProcess {
		add(field+".windowsOptions.hostProcess", "is true: the container would run as a process of the node")
	}
}

// volumeKind is the name of the volume source v sets (its JSON field, e.g. "hostPath"), or
// "unknown" for none.
func volumeKind(v corev1.VolumeSource) string {
	value := reflect.ValueOf(v)
	for i := range value.NumField() {
		if f := value.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(value.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "unknown"
}

// instanceForPods is instance for a step that applies pods: it refuses, as ValidateKarmada
// does, a spec asking for host access the worker does not allow, since the object read here
// may be newer than the one ValidateKarmada checked.
func (a *Activities) instanceForPods(ctx context.Context, ref Ref) (*operatorv1alpha1.Karmada, *target, error) {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if problems := a.HostAccess.CheckSpec(k); len(problems) > 0 {
		return nil, nil, temporal.NewNonRetryableApplicationError(strings.Join(problems, "; "), ErrValidation, nil)
	}
	return k, t, nil
}
