// Command localenv starts the local multi-cluster environment (see package env), prints where
// everything is, writes <dir>/env.json for scripts and stays up until interrupted. It also
// writes the files of a global resource proxy on -proxy-address (proxy.crt, proxy.key,
// proxy-ca.crt and proxy.kubeconfig, for a worker started with --enable-proxy) and, with
// -play-pods (the default), runs every pod of the Karmada instances provisioned into the host
// cluster from its manifest (package env/podrunner), so that an instance is a working Karmada.
//
//	go run ./test/env/cmd/localenv -members 2 -dir .localenv
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/karmadaflow/karmadaflow/test/env"
)

var proxyAddress string

// summary is env.json: the environment, and the proxy files if made.
type summary struct {
	env.Summary
	Proxy *env.ProxyFiles `json:"proxy,omitempty"`
}

func main() {
	var opts env.Options
	flag.IntVar(&opts.Members, "members", 2, fmt.Sprintf("number of member clusters (1-%d)", env.MaxMembers))
	flag.IntVar(&opts.LightMembers, "light-members", 0,
		fmt.Sprintf("how many of the members, the last ones, are light: kube-apiserver and KWOK only (at most %d members may be full)", env.MaxFullMembers))
	flag.StringVar(&opts.Dir, "dir", ".localenv", "directory for certificates, kubeconfigs, data, logs and env.json")
	flag.BoolVar(&opts.Keep, "keep", false, "keep the directory after shutdown")
	flag.StringVar(&opts.BinDir, "bin", "", "directory with the binaries (default <repo>/bin)")
	flag.StringVar(&opts.CRDDir, "crds", "", "directory with the control plane's CRDs (default <repo>/deploy/crds)")
	flag.StringVar(&opts.TemporalBackend, "temporal", env.TemporalDev, "Temporal backend: "+env.TemporalDev+" (the CLI's dev server) or "+env.TemporalPostgres+" (the Temporal server on PostgreSQL, mTLS, 4 history shards)")
	flag.IntVar(&opts.TemporalPort, "temporal-port", 7233, "Temporal frontend port (0: a free port)")
	flag.IntVar(&opts.TemporalUIPort, "temporal-ui-port", 8233, "Temporal Web UI port (0: a free port)")
	flag.StringVar(&opts.TemporalDBFile, "temporal-db", "", "SQLite file for the dev server (default: in memory)")
	flag.StringVar(&proxyAddress, "proxy-address", "127.0.0.1:10443", "loopback address the proxy files are made for (empty: none)")
	flag.BoolVar(&opts.PlayPods, "play-pods", true, "run the pods of the Karmada instances provisioned into the host cluster, with Karmada's own components from bin/")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	opts.Logf = log.Printf

	if err := run(opts); err != nil {
		log.Fatal(err)
	}
}

func run(opts env.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	e, err := env.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		log.Print("shutting down")
		if err := e.Stop(); err != nil {
			log.Print(err)
		}
	}()

	out := summary{Summary: e.Summary()}
	if proxyAddress != "" {
		files, err := e.WriteProxyFiles(proxyAddress)
		if err != nil {
			return err
		}
		out.Proxy = &files
	}
	summaryPath := filepath.Join(e.Dir, "env.json")
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(summaryPath, append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := e.WriteSummary(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\nMachine-readable: %s\nPress Ctrl-C to stop.\n", summaryPath)
	<-ctx.Done()
	return nil
}
