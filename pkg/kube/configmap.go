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

// MergeConfigMap writes cm's data beside what the live ConfigMap of its
// name holds (a JSON merge patch: its keys replace theirs, the others
// stay), creating it when there is none.
func MergeConfigMap(ctx context.Context, c *Client, cm *corev1.ConfigMap, fieldManager string) error {
	body, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	_, err = c.Core.ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		_, err = c.Core.ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	}
	return err
}
