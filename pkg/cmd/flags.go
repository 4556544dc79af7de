package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// connectionFlags are the kubectl connection flags that only matter to a
// command that talks to clusters (-n and --kubeconfig matter offline too).
var connectionFlags = []string{"as", "as-group", "as-uid", "request-timeout", "cache-dir"}

// refuseSet returns an error naming the first of the flags the user set,
// followed by why, so that no flag is accepted and then ignored. Global
// flags count however they were given, before or after the command.
func refuseSet(cmd *cobra.Command, why string, names ...string) error {
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		switch {
		case f == nil || !f.Changed:
		case f.Shorthand != "": // as help shows it: -n/--namespace
			return fmt.Errorf("-%s/--%s %s", f.Shorthand, f.Name, why)
		default:
			return fmt.Errorf("--%s %s", f.Name, why)
		}
	}
	return nil
}

// perCluster are kubectl's connection flags that kubectl fleet leaves out
// because one value cannot be right for every cluster: each cluster's
// kubeconfig context says where it is and who the user is.
var perCluster = map[string]bool{
	"user": true, "server": true, "s": true, "token": true, "username": true, "password": true,
	"client-certificate": true, "client-key": true, "certificate-authority": true,
	"insecure-skip-tls-verify": true, "tls-server-name": true, "proxy-url": true,
}

// explainFlagError says why a kubectl flag is unknown to kubectl fleet, for
// the flags a kubectl user is likely to try: pflag only says "unknown flag".
func explainFlagError(_ *cobra.Command, err error) error {
	msg := err.Error()
	var name string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name, _, _ = strings.Cut(strings.TrimPrefix(msg, "unknown flag: --"), "=")
	case strings.HasPrefix(msg, "unknown shorthand flag: '"):
		name = msg[len("unknown shorthand flag: '"):][:1]
	case strings.HasPrefix(msg, "flag needs an argument: 'v' in -v"), strings.HasPrefix(msg, `invalid argument "`) && strings.Contains(msg, `for "-v, --v" flag`):
		return fmt.Errorf("%w: -v is the log level, as kubectl's (-v=6 shows requests); status lists every object with -o wide or --verbose", err)
	}
	switch {
	case name == "context":
		return fmt.Errorf("%w: each cluster uses the context its fleet file entry names; select clusters by context with --kube-context", err)
	case perCluster[name]:
		return fmt.Errorf("%w: kubectl fleet does not take it, since one value would point every cluster at the same server or credential; set it in each cluster's kubeconfig", err)
	}
	return err
}
