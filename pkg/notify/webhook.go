package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/cloudevents/sdk-go/v2/event"
)

// SignatureHeader carries a webhook's signature of its body, as GitHub's
// X-Hub-Signature-256 does: "sha256=" and the hex HMAC-SHA256 of the
// body under the sink's secret.
const SignatureHeader = "X-Fleet-Signature-256"

// Webhook posts each event as a CloudEvent in structured mode (one JSON
// body, application/cloudevents+json), signed under Secret when set, so
// that the signature covers the event's attributes and its data alike.
type Webhook struct {
	// URL is where events are posted.
	URL string
	// Secret, when set, signs each body (SignatureHeader).
	Secret []byte
	// Client sends the requests (http.DefaultClient when nil).
	Client *http.Client
}

// Send posts ev (post).
func (w *Webhook) Send(ctx context.Context, ev Event) error {
	body, err := CloudEvent(ev)
	if err != nil {
		return Permanent(err)
	}
	header := http.Header{"Content-Type": {event.ApplicationCloudEventsJSON}}
	if len(w.Secret) > 0 {
		header.Set(SignatureHeader, Sign(w.Secret, body))
	}
	return post(ctx, w.Client, w.URL, header, body)
}

// post sends body to url with header through client (http.DefaultClient
// when nil): an answer of 2xx is delivery, 408, 429 and 5xx are worth
// another attempt, other refusals are Permanent; errors name url's host
// only.
func post(ctx context.Context, client *http.Client, url string, header http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Permanent(redact(err))
	}
	req.Header = header
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return redact(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return answered(resp)
}

// answered is the error of an HTTP answer that is not a success: worth
// retrying for 408, 429 and 5xx, Permanent otherwise.
func answered(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err := fmt.Errorf("%s %s: %s", resp.Request.Method, host(resp.Request.URL), resp.Status)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Permanent(fmt.Errorf("%w: redirected, and a sink's redirect is not followed", err))
	}
	switch {
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return err
	}
	return Permanent(err)
}

// Sign is the SignatureHeader value of body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether header is body's signature under secret, in
// constant time: what a receiver checks before it trusts an event.
func Verify(secret, body []byte, header string) bool {
	return hmac.Equal([]byte(header), []byte(Sign(secret, body)))
}

// Source is the CloudEvents source of a fleet's events.
func Source(fleet string) string { return "/kubectl-fleet/fleets/" + fleet }

// CloudEvent is ev as a structured CloudEvent (JSON): its type
// (Type.CloudEventsType), its source (the fleet), a subject (the wave, or
// the failed cluster), its id (the release's, and the event's number in
// it), and ev as its data.
func CloudEvent(ev Event) ([]byte, error) {
	ce := event.New()
	ce.SetID(ev.Release.ID + "." + strconv.Itoa(ev.Seq))
	ce.SetType(ev.Type.CloudEventsType())
	ce.SetSource(Source(ev.Fleet))
	ce.SetTime(ev.Time)
	switch {
	case ev.Failure != nil:
		ce.SetSubject(ev.Failure.Cluster)
	case ev.Wave != "":
		ce.SetSubject(ev.Wave)
	}
	if err := ce.SetData(event.ApplicationJSON, ev); err != nil {
		return nil, err
	}
	if err := ce.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(ce)
}

// redact is err without the URL a request was sent to, whose path or
// query may hold a credential (a Slack or Teams webhook's): its host
// only.
func redact(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	u, perr := url.Parse(ue.URL)
	where := "the sink"
	if perr == nil {
		where = host(u)
	}
	return fmt.Errorf("%s %s: %w", ue.Op, where, ue.Err)
}

// host is u's scheme and host, without its user, path or query.
func host(u *url.URL) string {
	if u == nil {
		return "the sink"
	}
	return u.Scheme + "://" + u.Host
}
