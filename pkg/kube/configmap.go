package kube

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConfigMap reads the ConfigMap namespace/name: nil, and no error, when
// there is none (or no such namespace).
func ConfigMap(ctx context.Context, c *Client, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := c.Core.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading configmap %s/%s: %w", namespace, name, err)
	}
	return cm, nil
}

// MergeConfigMap writes data into the ConfigMap namespace/name, beside
// what it holds (a JSON merge patch: these keys replace theirs, the
// others stay), creating it, labelled as kubectl fleet's, when there is
// none. The namespace must exist.
func MergeConfigMap(ctx context.Context, c *Client, namespace, name string, data map[string]string, fieldManager string) error {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-fleet"}}, Data: data}
	body, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	_, err = c.Core.ConfigMaps(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		_, err = c.Core.ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	}
	return err
}
