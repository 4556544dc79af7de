// Package rendered is the fleet's render for a run: which apps go to which
// clusters, each cluster's live attributes and capabilities, every target
// rendered, all or nothing.
//
// A Source says what to render (an ad hoc -k/-j/-f/--chart source, or the
// fleet file's apps); Resolve makes it the Apps that go to the selected
// clusters. NewRequest selects the clusters, resolves the apps and reads what
// the render needs from the clusters themselves (attributesFrom, and the
// capabilities a Helm chart renders with), through a Connector; a Request's
// Targets are the (cluster, app) pairs to render. Render renders them all
// with a render.Engine and returns a Set, or every render error and no
// Set: nothing touches a cluster with half a render.
//
// The package never sees cobra or the command's flags: pkg/cmd binds its
// flags to a Source and a Config, and gives its clients as the Connector.
package rendered
