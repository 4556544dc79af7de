package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/report"
)

// StepSummaryEnv names the file GitHub Actions shows as the job summary:
// when it is set, the markdown report is appended to it.
const StepSummaryEnv = "GITHUB_STEP_SUMMARY"

// ReportOptions are --report and --report-format, for diff, apply,
// rollback and status.
type ReportOptions struct {
	Report       string
	ReportFormat string

	// collected holds, per cluster, the apps' outcomes and diffs.
	collected *report.Collector
}

func (r *ReportOptions) addFlags(cmd *cobra.Command) { addReportFlags(cmd, &r.Report, &r.ReportFormat) }

// addReportFlags adds --report and --report-format.
func addReportFlags(cmd *cobra.Command, file, format *string) {
	cmd.Flags().StringVar(file, "report", "", "also write a report of every cluster to this file, for CI (see --report-format)")
	cmd.Flags().StringVar(format, "report-format", report.Markdown, "the report's format: markdown (a table, diffs folded; fits a pull-request comment) or junit (a test case per cluster and app)")
}

func (r *ReportOptions) validate() error {
	if r.ReportFormat != report.Markdown && r.ReportFormat != report.JUnit {
		return fmt.Errorf("--report-format %q: want markdown or junit", r.ReportFormat)
	}
	if r.enabled() {
		r.collected = report.NewCollector()
	}
	return nil
}

// enabled reports whether a report is written: --report, or a GitHub
// Actions job summary.
func (r *ReportOptions) enabled() bool {
	return r.Report != "" || os.Getenv(StepSummaryEnv) != ""
}

// write writes the report to --report and appends it, as markdown, to
// the job summary. A report that cannot be written is an error.
func (r *ReportOptions) write(rep report.Report, m *mask.Set) error {
	var errs []error
	if r.Report != "" {
		errs = append(errs, report.Write(rep, r.ReportFormat, r.Report, false, m))
	}
	if s := os.Getenv(StepSummaryEnv); s != "" {
		errs = append(errs, report.Write(rep, report.Markdown, s, true, m))
	}
	return errors.Join(errs...)
}

// finish writes the report, if any, and returns the command's error:
// err, or, when the command went well, the report's.
func (r *ReportOptions) finish(g *GlobalOptions, rep func() report.Report, err error) error {
	if !r.enabled() {
		return err
	}
	werr := r.write(rep(), g.mask)
	switch {
	case werr == nil:
		return err
	case err == nil:
		return werr
	}
	fmt.Fprintln(g.ErrOut, "error:", werr)
	return err
}
