package approval

import (
	"cmp"
	"fmt"
	"os"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/revision"
)

// SignerFor loads the approver's key that approve signs with: the file
// key names (approve's --key), else the one $KUBECTL_FLEET_APPROVER_KEY
// names; with neither, an error that names the fleet's approvers.
func SignerFor(key string, approvers []fleet.Approver) (Signer, error) {
	key = cmp.Or(key, os.Getenv(KeyEnv))
	if key == "" {
		return Signer{}, fmt.Errorf("approve signs with an approver's key: give --key or $%s (the fleet's approvers: %s)", KeyEnv, names(approvers))
	}
	return LoadSigner(key, approvers)
}

// names lists the approvers, or says there are none.
func names(approvers []fleet.Approver) string {
	var out []string
	for _, a := range approvers {
		out = append(out, a.Name)
	}
	if len(out) == 0 {
		return "none: list them under approvers: in the fleet file"
	}
	return strings.Join(out, ", ")
}

// Said is what approve says of a cluster where it recorded approved:
// "approved web 3f2a9c1, api 8d0e4b2"; "" for none.
func Said(approved []Approval) string {
	var apps []string
	for _, a := range approved {
		apps = append(apps, a.App+" "+revision.ShortDigest(a.Digest))
	}
	if len(apps) == 0 {
		return ""
	}
	return "approved " + strings.Join(apps, ", ")
}
