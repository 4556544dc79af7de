// Command sopsencrypt encrypts a file for age recipients with sops' own
// code (sopsfile.Encrypt), as "sops -e --age R [--encrypted-regex X]"
// does: how the example fleet's encrypted file is made on a machine
// without the sops CLI. Usage:
//
//	go run ./hack/sopsencrypt -age age1… [-encrypted-regex X] FILE > FILE.enc
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/sopsfile"
)

func main() {
	recipients := flag.String("age", "", "age recipients, comma-separated")
	regex := flag.String("encrypted-regex", "", "encrypt only the values of keys that match (default: every value)")
	flag.Parse()
	if flag.NArg() != 1 || *recipients == "" {
		fmt.Fprintln(os.Stderr, "usage: sopsencrypt -age age1… [-encrypted-regex X] FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		data, err = sopsfile.Encrypt(sopsfile.FormatOf(flag.Arg(0)), data, strings.Split(*recipients, ","), *regex)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sopsencrypt:", err)
		os.Exit(1)
	}
	os.Stdout.Write(data)
}
