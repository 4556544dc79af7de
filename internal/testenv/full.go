package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// adminKubeconfig writes, beside cluster i's data, a kubeconfig whose
// current context is the cluster's API server at direct, as admin, and
// returns its path.
func (e *Env) adminKubeconfig(i int, direct string) (string, error) {
	name := "c" + strconv.Itoa(i)
	kc := filepath.Join(e.opts.Dir, name, "admin.kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: direct, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: e.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	cfg.CurrentContext = name
	return kc, clientcmd.WriteToFile(*cfg, kc)
}

// startFull makes cluster i (1-based) a "full" cluster: a controller
// manager and a scheduler, and kwok running one fake node, so that
// Deployments become Available.
func (e *Env) startFull(ctx context.Context, i int, direct string) error {
	name := "c" + strconv.Itoa(i)
	dir := filepath.Join(e.opts.Dir, name)
	kc, err := e.adminKubeconfig(i, direct)
	if err != nil {
		return err
	}
	if _, err := e.start("kube-controller-manager-"+name, filepath.Join(e.opts.BinDir, "kube-controller-manager"),
		"--kubeconfig="+kc, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(e.opts.Dir, "sa.key"),
		"--root-ca-file="+filepath.Join(dir, "certs", "apiserver.crt"),
		"--use-service-account-credentials=false"); err != nil {
		return err
	}
	if _, err := e.start("kube-scheduler-"+name, filepath.Join(e.opts.BinDir, "kube-scheduler"),
		"--kubeconfig="+kc, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0"); err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	if _, err := e.start("kwok-"+name, filepath.Join(e.opts.BinDir, "kwok"),
		"--kubeconfig="+kc, "--config="+e.opts.KwokStages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
		// The node's heartbeat is its lease, renewed by kwok: without one
		// the node controller marks the fake node NotReady after its
		// grace period (40 s), and its pods unavailable.
		"--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:"+strconv.Itoa(ports[0])); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "kwok-node-0",
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": "kwok-node-0", "kubernetes.io/os": "linux"},
		},
		Status: corev1.NodeStatus{
			// Room for every pod the whole suite leaves behind: a full node
			// would leave later tests' pods Pending, their Deployments
			// never available.
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("5000")},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("5000")},
		},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the fake node in %s: %w", name, err)
	}
	// Ready: the node reports Ready and the default service account exists
	// (the controller manager creates it), so pods can be created.
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		_, saErr := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil && saErr == nil && nodeReady(n) {
			return nil
		}
		if err := e.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s's fake node and default service account: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
