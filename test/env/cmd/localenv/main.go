// Command localenv starts the local multi-cluster environment (see package env), prints where
// everything is, writes <dir>/env.json for scripts and stays up until interrupted.
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

func main() {
	var opts env.Options
	flag.IntVar(&opts.Members, "members", 2, fmt.Sprintf("number of member clusters (1-%d)", env.MaxMembers))
	flag.StringVar(&opts.Dir, "dir", ".localenv", "directory for certificates, kubeconfigs, data, logs and env.json")
	flag.BoolVar(&opts.Keep, "keep", false, "keep the directory after shutdown")
	flag.StringVar(&opts.BinDir, "bin", "", "directory with the binaries (default <repo>/bin)")
	flag.StringVar(&opts.CRDDir, "crds", "", "directory with the control plane's CRDs (default <repo>/deploy/crds)")
	flag.IntVar(&opts.TemporalPort, "temporal-port", 7233, "Temporal frontend port (0: a free port)")
	flag.IntVar(&opts.TemporalUIPort, "temporal-ui-port", 8233, "Temporal Web UI port (0: a free port)")
	flag.StringVar(&opts.TemporalDBFile, "temporal-db", "", "SQLite file for Temporal (default: in memory)")
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

	summaryPath := filepath.Join(e.Dir, "env.json")
	data, err := json.MarshalIndent(e.Summary(), "", "  ")
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
