// Package options owns the command-line flags and environment variables of the worker and the
// starter: one struct with the defaults, the parsing and the validation, so both processes are
// configured the same way. Every flag can also be set through an environment variable named
// KARMADAFLOW_ followed by the flag name in upper case with '-' turned into '_'
// (--temporal-address is KARMADAFLOW_TEMPORAL_ADDRESS); a flag on the command line wins. The
// flags are pflag's, as Kubernetes components' are: two dashes (--flag value or --flag=value),
// and --help shows them in sections.
package options
