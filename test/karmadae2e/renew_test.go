package karmadae2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// TestCertificatesRenewBeforeTheyExpire issues an instance 3-minute certificates and watches
// the workflow's timer renew them in the last third of their validity: the Secrets get new
// certificates, every component rolls onto them (etcd reloads its files instead), the
// two-replica API server answers the admin kubeconfig throughout, and after the first
// certificates expired a member still joins and a Deployment still propagates.
func TestCertificatesRenewBeforeTheyExpire(t *testing.T) {
	in := instance{namespace: nsRenew, name: "renew",
		annotations: map[string]string{prov.AnnotationCertificateValidity: "3m"},
		components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{
			ServiceType: corev1.ServiceTypeNodePort, CommonSettings: operatorv1alpha1.CommonSettings{Replicas: ptr.To[int32](2)}}}}
	createKarmada(t, in)
	waitKarmadaReady(t, in, 4*time.Minute)
	k, _, err := getKarmada(in)
	require.NoError(t, err)
	first := k.Status.Certificates
	require.NotNil(t, first, "status.certificates")
	require.NotNil(t, first.NotAfter)
	require.NotNil(t, first.RenewalTime)
	t.Logf("first certificates: %d, earliest expiry %s, renewal due %s", len(first.Items), first.NotAfter.UTC(), first.RenewalTime.UTC())
	assert.Less(t, time.Until(first.NotAfter.Time), 3*time.Minute+time.Second, "valid for 3 minutes")
	assert.True(t, first.RenewalTime.Before(first.NotAfter), "renewed before they expire")
	names := prov.NamesFor(in.name)
	assert.Contains(t, itemNames(first), names.Of(prov.SuffixCert)+"/"+prov.KeyAPIServerCert)
	assert.Contains(t, itemNames(first), names.Of(prov.SuffixAdminConfig)+"/"+prov.KeyKubeconfig)
	assert.Contains(t, itemNames(first), names.ComponentConfig(prov.Scheduler.Name)+"/"+prov.KeyKubeconfig)
	before := instancePods(t, in)
	checkRenewalTimer(t, in)

	probe := probeAdminKubeconfig(in)
	defer probe.stop()

	// Renewed: later certificates in the status, and the instance Ready again.
	var renewedAt time.Time
	require.NoError(t, poll(first.NotAfter.Sub(time.Now())+2*time.Minute, func() (bool, error) {
		k, _, err := getKarmada(in)
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
		c := k.Status.Certificates
		if c == nil || c.NotAfter == nil || !c.NotAfter.After(first.NotAfter.Add(time.Minute)) ||
			cond == nil || cond.Status != metav1.ConditionTrue {
			return false, nil
		}
		renewedAt = time.Now()
		t.Logf("renewed: earliest expiry now %s, next renewal %s", c.NotAfter.UTC(), c.RenewalTime.UTC())
		return true, nil
	}), "certificates renewed and the instance Ready")
	assert.True(t, renewedAt.Before(first.NotAfter.Time), "renewal done at %s, the first certificates expire at %s", renewedAt.UTC(), first.NotAfter.UTC())
	t.Logf("renewal done %.0fs before the first certificates expired", first.NotAfter.Sub(renewedAt).Seconds())

	secret, err := testEnv.Host.Client().CoreV1().Secrets(in.namespace).Get(context.Background(), names.Of(prov.SuffixCert), metav1.GetOptions{})
	require.NoError(t, err)
	cert, err := pki.ParseCert(secret.Data[prov.KeyAPIServerCert])
	require.NoError(t, err)
	assert.True(t, cert.NotAfter.After(first.NotAfter.Add(time.Minute)), "the API server's certificate was re-issued")

	// Every Deployment's pods were replaced; etcd's were not (it reloads its certificates).
	after := instancePods(t, in)
	for uid, name := range after {
		if _, old := before[uid]; old {
			assert.Contains(t, name, names.Of(prov.SuffixEtcd), "pod %s was not rolled", name)
		}
	}

	// Past the first certificates' expiry, everything works on the renewed ones.
	time.Sleep(time.Until(first.NotAfter.Add(5 * time.Second)))
	checkEveryComponentReady(t, in)
	failures, probes := probe.stop()
	t.Logf("admin kubeconfig probes during the renewal: %d, failed: %d", probes, len(failures))
	assert.Empty(t, failures, "the admin kubeconfig works throughout")
	assert.Greater(t, probes, 50)
	cp := controlPlane(t, in)
	joinMember(t, cp, "member1")
	propagate(t, cp, in)

	checkDeletion(t, in)
}

func itemNames(c *operatorv1alpha1.CertificatesStatus) []string {
	var out []string
	for _, item := range c.Items {
		out = append(out, item.Name)
	}
	return out
}

// instancePods maps the UIDs of the instance's pods to their names.
func instancePods(t *testing.T, in instance) map[types.UID]string {
	pods, err := testEnv.Host.Client().CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: prov.InstanceSelector(in.name)})
	require.NoError(t, err)
	out := map[types.UID]string{}
	for _, p := range pods.Items {
		out[p.UID] = p.Name
	}
	return out
}

// adminProbe lists namespaces through the admin kubeconfig, read afresh from its Secret each
// time (a renewal rewrites it), twice a second until stopped.
type adminProbe struct {
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	failures []string
	probes   int
}

func probeAdminKubeconfig(in instance) *adminProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &adminProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			err := p.once(ctx, in)
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.probes++
			if err != nil {
				p.failures = append(p.failures, time.Now().UTC().Format("15:04:05.000")+" "+err.Error())
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *adminProbe) once(ctx context.Context, in instance) error {
	secret, err := testEnv.Host.Client().CoreV1().Secrets(in.namespace).Get(ctx, prov.NamesFor(in.name).Of(prov.SuffixAdminConfig), metav1.GetOptions{})
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[prov.KeyKubeconfig])
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	return err
}

// stop ends the probe and returns its failures and the number of probes.
func (p *adminProbe) stop() ([]string, int) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures, p.probes
}

// checkRenewalTimer finds the renewal timer in the workflow's history, with the summary the
// Temporal UI shows.
func checkRenewalTimer(t *testing.T, in instance) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := testEnv.Temporal.Dial(ctx)
	require.NoError(t, err)
	defer c.Close()
	var summaries []string
	require.NoError(t, poll(30*time.Second, func() (bool, error) {
		summaries = nil
		iter := c.GetWorkflowHistory(ctx, wf.WorkflowID(in.namespace, in.name), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			event, err := iter.Next()
			if err != nil {
				return false, err
			}
			if event.GetTimerStartedEventAttributes() == nil || event.GetUserMetadata().GetSummary() == nil {
				continue
			}
			var summary string
			if err := converter.GetDefaultDataConverter().FromPayload(event.GetUserMetadata().GetSummary(), &summary); err != nil {
				return false, err
			}
			summaries = append(summaries, summary)
		}
		return len(summaries) > 0, nil
	}), "a timer with a summary in the history")
	assert.Contains(t, summaries[len(summaries)-1], "renew the certificates of Karmada "+in.namespace+"/"+in.name)
	t.Logf("timer summary: %s", summaries[len(summaries)-1])
}
