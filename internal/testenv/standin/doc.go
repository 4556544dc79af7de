// Package standin is a measuring tool, not a Kubernetes API server: a
// small in-memory HTTPS server per cluster that answers exactly the
// requests a kubectl fleet rollout sends (apply create, no-op and change,
// diff, status), so that make bench can measure how the plugin's own cost
// grows with the number of clusters past what real kube-apiservers on one
// machine carry (one costs ≈ 270 MiB and a share of two cores).
//
// Each cluster has its own loopback listener, TLS certificate and HTTP/2
// server, and its own context in the kubeconfig Start writes, so the
// plugin opens one connection, does one TLS handshake and keeps one
// discovery cache per cluster, as against real servers; with Latency set,
// the same testenv.Proxy as in front of real servers delays each
// direction. Each cluster counts the requests it answers (Requests).
//
// What it serves, as kube-apiserver v1.37 does:
//   - discovery: /version, /api and /apis, aggregated (v2) when the
//     client asks for it, else the legacy documents, all built from a
//     real server's aggregated discovery recorded in testdata/;
//   - for every resource that discovery names: get, list (label and
//     field selectors on metadata.name and metadata.namespace), create,
//     update (optimistic concurrency: Conflict on a stale
//     resourceVersion), delete (uid and resourceVersion preconditions),
//     server-side apply (application/apply-patch+yaml, managedFields
//     computed by apimachinery's own field manager, Conflict without
//     force) and JSON merge patch, dry runs (dryRun=All) of each;
//     metadata-only get and list (as=PartialObjectMetadata[List]) in
//     protobuf or JSON, as the metadata client asks; built-in kinds
//     whole in protobuf to a client that prefers it (client-go's typed
//     clients), else in JSON;
//   - a write that changes nothing keeps the resourceVersion (the
//     plugin's no-op detection depends on it); generation moves with the
//     spec of the kinds whose strategy keeps one (Deployments, …);
//     status is the server's: {} for a new Deployment (no controllers
//     run, as with an apiserver-only cluster), phase Active for a
//     Namespace, which a delete leaves Terminating for ever;
//   - SelfSubjectReview (the admin user) and SelfSubjectAccessReview
//     (allowed), which are not stored.
//
// What it does not do: watch, defaulting and validation beyond the
// above, admission, RBAC (one bearer token, the admin's), pagination
// (a list answers everything), subresources, aggregated APIs, garbage
// collection. An apply uses a deduced schema (maps merge by key, lists
// are atomic), not the OpenAPI of each kind.
//
// It is used by make bench's scaling run (bench/) only. The e2e proofs
// of behaviour (test/e2e) run against real kube-apiservers (package
// testenv) and must never use it: what it answers is checked against a
// real server's answers, not a reference for them.
package standin
