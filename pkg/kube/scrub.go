package kube

import (
	"regexp"
	"strings"
	"unicode"
)

// Redacted replaces what Scrub removes.
const Redacted = "<redacted>"

var (
	// "Authorization: Bearer abc", "basic dXNlcjpwYXNz".
	authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+`)
	// token: x, "password": "x", client-key-data: x, --token=x, api_key=x.
	secretField = regexp.MustCompile(`(?i)((?:token|password|passwd|secret|credentials?|api[_-]?key|private[_-]?key|client-key-data|client-certificate-data)["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;"']+)`)
	// --password hunter2, -p hunter2, --token abc: a flag that names a
	// secret, and its value as the next argument.
	secretFlag = regexp.MustCompile(`(?i)((?:^|\s)(?:--?(?:password|passwd|pass|token|secret|api[_-]?key|client-secret)|-p)\s+)("[^"]*"|'[^']*'|[^\s"']+)`)
	// https://user:pass@host: the password of a URL's user info.
	urlPassword = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*):([^/\s@]*)@`)
	// A kubeadm bootstrap token: [a-z0-9]{6}.[a-z0-9]{16}.
	bootstrapToken = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)
	// Runs of the characters of base64, base64url, hex and JWTs.
	tokenRun = regexp.MustCompile(`[A-Za-z0-9+/=_.-]{24,}`)
)

// Scrub removes from s what looks like a credential, so that a command's
// error output can be shown: the values of token, password and
// key/certificate data fields, bearer and basic authorization values, the
// value after a flag that names a secret (--password VALUE, -p VALUE),
// the password of a URL (https://user:password@host), kubeadm bootstrap
// tokens, and long runs of base64, hex or JWT characters that mix letters
// and digits. It errs on the side of removing too much.
func Scrub(s string) string {
	s = authScheme.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = urlPassword.ReplaceAllString(s, "${1}:"+Redacted+"@")
	s = bootstrapToken.ReplaceAllString(s, Redacted)
	s = secretFlag.ReplaceAllString(s, "${1}"+Redacted)
	s = secretField.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretField.FindStringSubmatch(m)
		if sub[2] == Redacted {
			return m
		}
		return sub[1] + Redacted
	})
	return tokenRun.ReplaceAllStringFunc(s, func(run string) string {
		if strings.IndexFunc(run, unicode.IsDigit) < 0 || strings.IndexFunc(run, unicode.IsLetter) < 0 {
			return run // a word-like-name-with-dashes, not a secret
		}
		return Redacted
	})
}
