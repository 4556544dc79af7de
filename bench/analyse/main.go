// Command analyse is make bench's analysis contender: it measures an
// analysis of each of -clusters clusters -measurements times against a
// Prometheus, all clusters at once as a wave's soak does, through
// pkg/analysis (what kubectl fleet runs per measurement), or, with
// -floor, through a bare HTTP GET and JSON decode per measurement (the
// least any tool does). It prints the measurements and requests made,
// and exits 1 when one did not succeed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/analysis"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// query is one sample per cluster, 0.001, whatever Prometheus scraped:
// the cluster's own series does not exist, and absent() makes it 1.
const query = `0.001 * absent(app_error_ratio{cluster="${FLEET_CLUSTER_NAME}"})`

// counting counts the requests that go through it.
type counting struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func main() {
	address := flag.String("prometheus", "", "the Prometheus API's base URL")
	clusters := flag.Int("clusters", 1000, "clusters measured at once")
	measurements := flag.Int("measurements", 3, "measurements per cluster")
	floor := flag.Bool("floor", false, "a bare GET and JSON decode per measurement instead of pkg/analysis")
	flag.Parse()
	rt := &counting{next: http.DefaultTransport}
	var (
		wg     sync.WaitGroup
		failed atomic.Int64
	)
	for i := range *clusters {
		name := "c" + strconv.Itoa(i)
		wg.Go(func() {
			var err error
			if *floor {
				err = bare(rt, *address, name, *measurements)
			} else {
				err = measured(rt, *address, name, *measurements)
			}
			if err != nil {
				if failed.Add(1) == 1 {
					fmt.Fprintln(os.Stderr, name+":", err)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d clusters × %d measurements, %d requests\n", *clusters, *measurements, rt.n.Load())
	if failed.Load() > 0 {
		os.Exit(1)
	}
}

// measured runs the analysis through pkg/analysis, as a soak does.
func measured(rt http.RoundTripper, address, cluster string, n int) error {
	spec := fleet.Analysis{Name: "error-rate", Prometheus: &fleet.PrometheusMetric{Address: "${prometheus}", Query: query}, SuccessCondition: "result < 0.01", Count: n}
	p, err := analysis.ProviderOf(spec, map[string]string{"prometheus": address, "FLEET_CLUSTER_NAME": cluster}, "", os.Getenv, rt)
	if err != nil {
		return err
	}
	a, err := analysis.Of(spec, p)
	if err != nil {
		return err
	}
	a.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	return a.Run(context.Background(), time.Now(), func(analysis.Measurement) {})
}

// bare GETs the query and decodes its answer, n times.
func bare(rt http.RoundTripper, address, cluster string, n int) error {
	client := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	q := url.QueryEscape(`0.001 * absent(app_error_ratio{cluster="` + cluster + `"})`)
	for range n {
		resp, err := client.Get(address + "/api/v1/query?query=" + q)
		if err != nil {
			return err
		}
		var answer struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(answer.Data.Result) != 1 {
			return fmt.Errorf("%d samples", len(answer.Data.Result))
		}
		s, _ := answer.Data.Result[0].Value[1].(string)
		if v, err := strconv.ParseFloat(s, 64); err != nil || v >= 0.01 {
			return fmt.Errorf("value %q", s)
		}
	}
	return nil
}
