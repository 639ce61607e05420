package provisioning

import "time"

// Ref names a Karmada object.
type Ref struct {
	Namespace string
	Name      string
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Summary is a Karmada object as the workflow needs it: flags, the generation and a hash per
// step of the spec parts it depends on; never the object body.
type Summary struct {
	Exists       bool
	Deleting     bool
	HasFinalizer bool
	// KeepOnDelete is the disable-cascading-deletion label: deleting leaves everything.
	KeepOnDelete bool
	Suspended    bool
	Generation   int64
	ServiceType  string
	LocalEtcd    bool
	// Hashes has one entry per step (see StepHashes).
	Hashes map[string]string
	// Components are the components installed after the API servers, in the order they roll.
	Components []string `json:",omitempty"`
	// Invalid lists the validation problems, each naming its field; the error returned with
	// it is a non-retryable ValidationError.
	Invalid []string `json:",omitempty"`
}

// ErrValidation is the ApplicationError type of an invalid spec.
const ErrValidation = "ValidationError"

// InstallInput is the input of the steps that apply workloads: the hash of the certificates
// they mount, so that a re-issued certificate rolls their pods.
type InstallInput struct {
	Ref      Ref
	CertHash string
}

// ComponentInput names one component (Component.Name) of an instance, and the hash of the
// certificates it mounts.
type ComponentInput struct {
	Ref       Ref
	Component string
	CertHash  string `json:",omitempty"`
}

// Certificates is what GenerateCertificates tells the workflow: hashes of the certificates
// (never keys) in the Secrets.
type Certificates struct {
	CertHash string
}

// ServiceInfo is the API server's Service as status.apiServerService reports it.
type ServiceInfo struct {
	Name        string
	ServiceType string
	Port        int32
	NodePort    int32 `json:",omitempty"`
}

// LoadBalancerInput carries the address the load balancer got.
type LoadBalancerInput struct {
	Ref     Ref
	Address string
}

// StatusInput is what WriteKarmadaStatus writes: the Ready condition for Generation and,
// once installed, the admin kubeconfig Secret and the versions. apiServerService is read
// from the Service itself.
type StatusInput struct {
	Ref        Ref
	Generation int64
	Ready      bool
	Reason     string
	Message    string
	// AdminConfig is set once the admin kubeconfig Secret exists.
	AdminConfig bool `json:",omitempty"`
	// Completed sets the versions.
	Completed bool `json:",omitempty"`
	// Warning, when set, is also recorded as a Warning Event on the Karmada with Reason.
	Warning bool `json:",omitempty"`
	// Certificates, when set, is written to status.certificates.
	Certificates *CertificateExpiries `json:",omitempty"`
}

// CertificateExpiries are the expiries of an instance's certificates (never the certificates):
// the serving and client certificates in its Secrets, its component kubeconfigs and its admin
// kubeconfig.
type CertificateExpiries struct {
	Items []CertificateExpiry
	// NotAfter is the earliest expiry; RenewAt when the first certificate is due for renewal.
	NotAfter, RenewAt time.Time
}

// CertificateExpiry is the expiry of one certificate, named "<Secret>/<key>".
type CertificateExpiry struct {
	Name     string
	NotAfter time.Time
}
