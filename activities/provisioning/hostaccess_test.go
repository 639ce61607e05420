package provisioning

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

func withSidecar(c corev1.Container) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		api := k.Spec.Components.KarmadaAPIServer
		api.SidecarContainers = append(api.SidecarContainers, c)
	}
}

func withSidecarSecurity(sc corev1.SecurityContext) func(*operatorv1alpha1.Karmada) {
	return withSidecar(corev1.Container{Name: "kms", Image: "kms:1", SecurityContext: &sc})
}

func withExtraVolume(v corev1.VolumeSource) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		api := k.Spec.Components.KarmadaAPIServer
		api.ExtraVolumes = append(api.ExtraVolumes, corev1.Volume{Name: "extra", VolumeSource: v})
	}
}

// hostAccessCases are the specs that ask for pods reaching their node, each with the field
// its one problem names.
var hostAccessCases = []struct {
	name   string
	mutate func(*operatorv1alpha1.Karmada)
	field  string
}{
	{"hostPath volume", withExtraVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}),
		"spec.components.karmadaAPIServer.extraVolumes[0].hostPath: mounts the node's directory /"},
	{"nfs volume", withExtraVolume(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "192.0.2.1", Path: "/export"}}),
		"spec.components.karmadaAPIServer.extraVolumes[0]: is a nfs volume, which the node mounts itself"},
	{"etcd on a hostPath", withEtcdData(onHostPath),
		"spec.components.etcd.local.volumeData.hostPath: keeps etcd's data in the node's directory /var/lib/karmada-etcd"},
	{"privileged", withSidecarSecurity(corev1.SecurityContext{Privileged: ptr.To(true)}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.privileged: is true"},
	{"privilege escalation", withSidecarSecurity(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.allowPrivilegeEscalation: is true"},
	{"added capabilities", withSidecarSecurity(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.capabilities.add: adds [SYS_ADMIN]"},
	{"unmasked /proc", withSidecarSecurity(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.procMount: is Unmasked"},
	{"SELinux type", withSidecarSecurity(corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.seLinuxOptions: sets user \"\", role \"\" and type \"spc_t\""},
	{"SELinux user", withSidecarSecurity(corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "system_u", Type: "container_t"}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.seLinuxOptions: sets user \"system_u\""},
	{"seccomp", withSidecarSecurity(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.seccompProfile.type: is Unconfined"},
	{"AppArmor", withSidecarSecurity(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.appArmorProfile.type: is Unconfined"},
	{"Windows host process", withSidecarSecurity(corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.windowsOptions.hostProcess: is true"},
	{"host port", withSidecar(corev1.Container{Name: "kms", Image: "kms:1", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}}),
		"spec.components.karmadaAPIServer.sidecarContainers[0].ports[0].hostPort: binds the node's port 80"},
	{"AppArmor annotation", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaScheduler = &operatorv1alpha1.KarmadaScheduler{CommonSettings: operatorv1alpha1.CommonSettings{
			Annotations: map[string]string{appArmorAnnotationPrefix + "karmada-scheduler": "unconfined"}}}
	}, `spec.components.karmadaScheduler.annotations: container.apparmor.security.beta.kubernetes.io/karmada-scheduler is "unconfined"`},
}

// TestHostAccessRefusesWhatReachesTheNode: each thing a spec may ask of its pods' nodes is
// refused naming its field and the flag that allows it, unless the flag lists the Karmada's
// namespace.
func TestHostAccessRefusesWhatReachesTheNode(t *testing.T) {
	for _, c := range hostAccessCases {
		t.Run(c.name, func(t *testing.T) {
			k := karmada("foo", c.mutate)
			problems := HostAccess{}.CheckSpec(k)
			require.Len(t, problems, 1, "%q", problems)
			assert.True(t, strings.HasPrefix(problems[0], c.field), "%s", problems[0])
			assert.True(t, strings.HasSuffix(problems[0], "which only the Karmadas of the namespaces in the worker's --host-access-namespaces may ask for (not tenant1)"),
				"%s", problems[0])
			assert.Len(t, HostAccess{Namespaces: []string{"tenant2"}}.CheckSpec(k), 1, "another namespace allowed")
			assert.Empty(t, HostAccess{Namespaces: []string{"tenant2", "tenant1"}}.CheckSpec(k), "the namespace allowed")
			assert.Len(t, Validate(k), 0, "Validate leaves host access to HostAccess")
		})
	}
}

// TestHostAccessAllowsWhatStaysInThePod: volumes of Pod Security's restricted kinds, a sidecar
// that drops privileges, an etcd on a volume claim and AppArmor's default profile need no
// allowance.
func TestHostAccessAllowsWhatStaysInThePod(t *testing.T) {
	k := karmada("foo",
		withExtraVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "encryption"}}}),
		withExtraVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		withExtraVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "kms"}}),
		withExtraVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}),
		withExtraVolume(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "kms"}}),
		withSidecar(corev1.Container{Name: "kms", Image: "kms:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}),
		withSidecarSecurity(corev1.SecurityContext{Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, ProcMount: ptr.To(corev1.DefaultProcMount),
			SELinuxOptions:  &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"},
			SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}),
		withEtcdData(onClaim),
		func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.Annotations = map[string]string{appArmorAnnotationPrefix + "kms": "runtime/default",
				appArmorAnnotationPrefix + "kube-apiserver": "localhost/karmada"}
		})
	assert.Empty(t, HostAccess{}.CheckSpec(k))
}

// TestValidateKarmadaRefusesHostAccess: ValidateKarmada reports host access as a
// ValidationError naming the field, the condition's message; allowed, the spec is valid.
func TestValidateKarmadaRefusesHostAccess(t *testing.T) {
	ctx := context.Background()
	k := karmada("foo", withSidecarSecurity(corev1.SecurityContext{Privileged: ptr.To(true)}),
		withExtraVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}))
	k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	a := &Activities{Host: fake.NewClientset(), HostDynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, u)}
	ref := Ref{Namespace: "tenant1", Name: "foo"}

	sum, err := a.ValidateKarmada(ctx, ref)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrValidation, appErr.Type())
	require.Len(t, sum.Invalid, 2)
	assert.True(t, strings.HasPrefix(sum.Invalid[0], "spec.components.karmadaAPIServer.extraVolumes[0].hostPath: "), sum.Invalid[0])
	assert.True(t, strings.HasPrefix(sum.Invalid[1], "spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.privileged: "), sum.Invalid[1])

	a.HostAccess = HostAccess{Namespaces: []string{"tenant1"}}
	_, err = a.ValidateKarmada(ctx, ref)
	assert.NoError(t, err)
}

// TestInstallStepsRefuseHostAccess: a step that applies pods refuses a spec asking for host
// access (one changed after ValidateKarmada read it) before it writes anything.
func TestInstallStepsRefuseHostAccess(t *testing.T) {
	ctx := context.Background()
	k := karmada("foo", withSidecarSecurity(corev1.SecurityContext{Privileged: ptr.To(true)}))
	k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	host := fake.NewClientset()
	a := &Activities{Host: host, HostDynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), u)}
	in := InstallInput{Ref: Ref{Namespace: "tenant1", Name: "foo"}}
	steps := map[string]func() error{
		"InstallEtcd":                func() error { return a.InstallEtcd(ctx, in) },
		"InstallAPIServer":           func() error { _, err := a.InstallAPIServer(ctx, in); return err },
		"InstallAggregatedAPIServer": func() error { return a.InstallAggregatedAPIServer(ctx, in) },
		"InstallComponents":          func() error { _, err := a.InstallComponents(ctx, in); return err },
		"InstallComponent":           func() error { return a.InstallComponent(ctx, ComponentInput{Ref: in.Ref, Component: Scheduler.Name}) },
	}
	for name, step := range steps {
		err := step()
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%s: %v", name, err)
		assert.Equal(t, ErrValidation, appErr.Type(), name)
		assert.True(t, appErr.NonRetryable(), name)
		assert.Contains(t, appErr.Message(), "sidecarContainers[0].securityContext.privileged: ", name)
	}
	assert.Empty(t, host.Actions(), "nothing read or written in the host cluster")
}
