package logging

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// Without -v, client-go's own logs, its errors too, are not written.
func TestLoggingQuietWithoutV(t *testing.T) {
	var buf bytes.Buffer
	Setup(0, &buf)
	klog.Background().Error(nil, "Couldn't get current server API group list")
	klog.Errorf("memcache.go: %s", "connection refused")
	klog.Flush()
	if buf.Len() > 0 {
		t.Errorf("written without -v:\n%s", buf.String())
	}
	Setup(1, &buf)
	defer Setup(0, &bytes.Buffer{})
	klog.Background().Error(nil, "Couldn't get current server API group list")
	if !strings.Contains(buf.String(), "Couldn't get current server API group list") {
		t.Errorf("-v=1 does not show client-go's errors: %q", buf.String())
	}
}

// client-go logs bodies at -v=8 and above; ours are never written.
func TestLoggingNeverWritesBodies(t *testing.T) {
	var buf bytes.Buffer
	Setup(9, &buf)
	defer Setup(0, &bytes.Buffer{})
	const secret = `{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}`
	logger := klog.Background()
	logger.V(8).Info("Request Body", "body", secret)
	logger.V(8).WithValues("body", []byte(secret)).Info("Response Body")
	logger.V(6).Info("HTTP", "verb", "GET", "url", "https://10.0.0.1/api/v1/namespaces/web/secrets/db", "status", "200 OK")
	klog.V(6).Infof("GET %s 200 OK", "https://10.0.0.1/api")
	logger.V(10).Info("too verbose", "x", 1)
	out := buf.String()
	for _, want := range []string{`"Request Body" body="<52 bytes not shown`, `"Response Body" body="<52 bytes not shown`, `"HTTP" verb="GET" url="https://10.0.0.1/api/v1/namespaces/web/secrets/db"`, "GET https://10.0.0.1/api 200 OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	for _, never := range []string{"aHVudGVyMg==", "too verbose"} {
		if strings.Contains(out, never) {
			t.Errorf("%q written:\n%s", never, out)
		}
	}
}
