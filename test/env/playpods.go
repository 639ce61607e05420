package env

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/karmadaflow/karmadaflow/test/env/podrunner"
)

// With Options.PlayPods the pods karmadaflow provisions into the host cluster run for real:
// the host's KWOK leaves them alone (its pod stages do not match them) and a pod runner
// (package podrunner) is their kubelet on the host node.

// startPodRunner plays the host node's provisioned pods, with PlayPods.
func (e *Env) startPodRunner(ctx context.Context) error {
	if !e.opts.PlayPods {
		return nil
	}
	begin := time.Now()
	if err := raiseInotifyInstances(minInotifyInstances); err != nil {
		return err
	}
	runner, err := podrunner.Start(ctx, podrunner.Options{
		Client:   e.Host.Client(),
		NodeName: e.Host.NodeName,
		NodeIP:   e.Host.NodeIP,
		BinDir:   e.opts.BinDir,
		Dir:      e.PodsDir(),
		Logf:     e.opts.Logf,
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.pods = runner
	e.mu.Unlock()
	e.phase("pod runner started", begin)
	return nil
}

// minInotifyInstances is how many inotify instances one user may hold while pods are played.
// Every Karmada component watches its certificate and kubeconfig files, several instances
// each, and ten instances exceed the kernel's default of 128: karmada-webhook then exits with
// "couldn't initialize inotify: too many open files". A node of a real cluster has the same
// limit per user, but its pods run as several users; kind raises it likewise.
const minInotifyInstances = 1024

const inotifyInstancesFile = "/proc/sys/fs/inotify/max_user_instances"

// raiseInotifyInstances makes fs.inotify.max_user_instances at least n (never lowers it).
func raiseInotifyInstances(n int) error {
	data, err := os.ReadFile(inotifyInstancesFile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", inotifyInstancesFile, err)
	}
	current, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || current >= n {
		return err
	}
	if err := os.WriteFile(inotifyInstancesFile, []byte(strconv.Itoa(n)), 0o644); err != nil {
		return fmt.Errorf("raising fs.inotify.max_user_instances from %d to %d for the played pods: %w", current, n, err)
	}
	return nil
}

// PodsDir holds what the pod runner of PlayPods writes: the pods' volumes and, in its logs
// directory, their logs.
func (e *Env) PodsDir() string { return filepath.Join(e.Dir, "pods") }

// yamlDocumentSeparator splits a multi-document YAML stream.
var yamlDocumentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// excludePlayedPods adds to every pod Stage of KWOK's configuration a selector requirement
// that the pod is not one the pod runner plays. KWOK's selectors query the object with jq
// expressions; NotIn also matches a pod without the label.
func excludePlayedPods(stages []byte) ([]byte, error) {
	var out bytes.Buffer
	for _, doc := range yamlDocumentSeparator.Split(string(stages), -1) {
		if len(bytes.TrimSpace([]byte(doc))) == 0 {
			continue
		}
		var stage struct {
			Kind string `json:"kind"`
			Spec struct {
				ResourceRef struct {
					Kind string `json:"kind"`
				} `json:"resourceRef"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
			return nil, fmt.Errorf("KWOK stage: %w", err)
		}
		out.WriteString("---\n")
		if stage.Kind != "Stage" || stage.Spec.ResourceRef.Kind != "Pod" {
			out.WriteString(doc)
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("KWOK stage: %w", err)
		}
		spec, _ := obj["spec"].(map[string]any)
		selector, _ := spec["selector"].(map[string]any)
		if selector == nil {
			selector = map[string]any{}
			spec["selector"] = selector
		}
		expressions, _ := selector["matchExpressions"].([]any)
		selector["matchExpressions"] = append(expressions, map[string]any{
			"key":      fmt.Sprintf(".metadata.labels[%q]", podrunner.LabelManagedBy),
			"operator": "NotIn",
			"values":   []any{podrunner.ManagedBy},
		})
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.Write(data)
	}
	return out.Bytes(), nil
}
