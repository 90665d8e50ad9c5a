package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/migrate"
	"github.com/kcd-project/kcd/tui/migrateview"
	"github.com/kcd-project/kcd/tui/printer"
)

func newMigrateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move connectors between a Kafka Connect cluster and kcd",
	}
	cmd.AddCommand(newFromKafkaCmd(g), newToKafkaCmd(g))
	return cmd
}

// migrateFlags are the flags both directions share.
type migrateFlags struct {
	kafka     *migrate.KafkaFlags
	topics    migrate.Topics
	include   string
	dryRun    bool
	overwrite bool
	output    string
}

func (f *migrateFlags) add(cmd *cobra.Command) {
	f.kafka = migrate.AddKafkaFlags(cmd.Flags())
	d := migrate.DefaultTopics()
	cmd.Flags().StringVar(&f.topics.Config, "config-topic", d.Config, "Kafka Connect's config.storage.topic")
	cmd.Flags().StringVar(&f.topics.Offset, "offset-topic", d.Offset, "Kafka Connect's offset.storage.topic")
	cmd.Flags().StringVar(&f.topics.Status, "status-topic", d.Status, "Kafka Connect's status.storage.topic")
	cmd.Flags().StringVarP(&f.include, "include", "e", "", "Only connectors whose name matches this regular expression")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "Print the plan and change nothing")
	cmd.Flags().BoolVar(&f.overwrite, "overwrite", false, "Replace connectors that exist on the other side (in kcd they must be stopped)")
	addOutputFlag(cmd, &f.output)
}

// filter compiles --include.
func (f *migrateFlags) filter() (func(string) bool, error) {
	if f.include == "" {
		return nil, nil
	}
	re, err := regexp.Compile(f.include)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--include: %w", err)}
	}
	return re.MatchString, nil
}

// kafkaClient connects to the Kafka cluster the flags name.
func (f *migrateFlags) kafkaClient() (*kgo.Client, error) {
	cfg, err := f.kafka.ClientConfig()
	if err != nil {
		return nil, &usageError{err}
	}
	cl, err := cfg.NewClient()
	if err != nil {
		return nil, &usageError{err}
	}
	return cl, nil
}

// reporter shows progress on stderr: a bar on a terminal, lines otherwise.
func reporter(cmd *cobra.Command) migrateview.Reporter {
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(f.Fd()) {
		return migrateview.NewBar(cmd.Context(), f)
	}
	return &migrateview.Lines{W: cmd.ErrOrStderr(), Every: 3 * time.Second}
}

func newFromKafkaCmd(g *globals) *cobra.Command {
	f := &migrateFlags{}
	var connect connectPeer
	var stopSource bool
	cmd := &cobra.Command{
		Use:   "from-kafka",
		Short: "Import a Kafka Connect cluster's connectors, target states, task configs and offsets into kcd",
		Long: `Reads a Kafka Connect cluster's internal topics (configs, offsets, statuses) and its
sink connectors' consumer groups, prints the plan, and imports it into the kcd cluster
at --server in one atomic step: every connector or none. Connectors that exist in kcd
are left alone unless --overwrite (they must be stopped in kcd). A connector whose
class, converters, transforms or predicates kcd lacks is imported STOPPED, with the
reason in the plan.

Stop the connectors on Kafka Connect first, or they process the same records twice:
with --connect-url, kcctl checks and warns. With --stop-source, once the plan is made
and kcd has checked it, it stops there the running connectors the import writes,
waits for their offsets to be committed, reads again and imports them with the target
state they had; if the run fails after that, it prints the command that resumes them.`,
		Example: `  kcctl migrate from-kafka --bootstrap-servers kafka:9092 --dry-run
  kcctl migrate from-kafka --bootstrap-servers kafka:9093 --command-config client.properties \
      --connect-url http://connect:8083 --stop-source`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stopSource && connect.url == "" {
				return &usageError{errors.New("--stop-source needs --connect-url")}
			}
			return runFromKafka(cmd, g, f, &connect, stopSource)
		},
	}
	f.add(cmd)
	connect.add(cmd)
	cmd.Flags().BoolVar(&stopSource, "stop-source", false, "Once the plan is checked, stop the connectors it imports that still run on the Kafka Connect cluster, and read again (needs --connect-url)")
	return cmd
}

func runFromKafka(cmd *cobra.Command, g *globals, f *migrateFlags, connect *connectPeer, stopSource bool) (err error) {
	ctx := cmd.Context()
	include, err := f.filter()
	if err != nil {
		return err
	}
	kcd := g.client()
	var live migrate.Live
	if connect.url != "" {
		kc, err := connect.client()
		if err != nil {
			return err
		}
		live = kc
	}
	cl, err := f.kafkaClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	plugins, err := kcd.Plugins(ctx, false)
	if err != nil {
		return fmt.Errorf("list kcd's plugins: %w", err)
	}
	cat := make([]migrate.Plugin, len(plugins))
	for i, p := range plugins {
		cat[i] = migrate.Plugin{Class: p.Class, Type: string(p.Type), Version: p.Version}
	}
	catalogue := migrate.NewCatalogue(cat)

	// plan reads the topics and asks kcd what it would do (a dry-run
	// import); fix adjusts what was read before the plan is made of it.
	plan := func(fix func(*migrate.Cluster)) (*migrate.Cluster, *migrate.Plan, error) {
		rep := reporter(cmd)
		c, err := migrate.Read(ctx, cl, migrate.ReadOptions{Topics: f.topics, Include: include, Progress: rep.Report})
		rep.Stop()
		if err != nil {
			return nil, nil, migrate.ExplainError(err)
		}
		if fix != nil {
			fix(c)
		}
		p := migrate.BuildPlan(c, catalogue)
		if len(c.Connectors) > 0 {
			dry, err := kcd.Import(ctx, p.ImportRequest(c, f.overwrite, true))
			if err != nil {
				return nil, nil, fmt.Errorf("check the plan with kcd: %w", err)
			}
			p.SetActions(dry.Items)
		}
		return c, p, nil
	}

	// Everything that can refuse comes before anything is stopped: the
	// read, the plan, kcd's dry run and its blocked check.
	c, p, err := plan(nil)
	if err != nil {
		return err
	}
	var running []string
	if live != nil {
		if running, err = migrate.Running(ctx, live, include); err != nil {
			return err
		}
	}
	blocked := p.Blocked()
	var toStop []string
	if stopSource && !f.dryRun && len(blocked) == 0 {
		// Only what the import writes: one kcd leaves alone keeps running.
		imported := map[string]bool{}
		for _, pc := range p.Connectors {
			imported[pc.Name] = pc.Imported()
		}
		toStop = only(running, func(n string) bool { return imported[n] })
	}
	warnRunning(cmd, without(running, toStop), "Kafka Connect", "kcd", stopSource, f.dryRun)

	if len(toStop) > 0 {
		before := migrate.Targets(c)
		// err is the function's result: any failure from here on names
		// the connectors stopped.
		var stopped []string
		defer func() {
			if err != nil {
				resumeHint(cmd, stopped, "Kafka Connect", resumeCommand(connect, stopped))
			}
		}()
		if stopped, err = stopConnectors(cmd, live, toStop, "Kafka Connect"); err != nil {
			return err
		}
		// Read again: the stop committed their last offsets.
		c, p, err = plan(func(c *migrate.Cluster) { migrate.UnstopMigrated(c, stopped, before) })
		if err != nil {
			return err
		}
		blocked = p.Blocked()
	}

	out := cmd.OutOrStdout()
	if err := printer.Print(out, f.output, migrateview.PlanPrintable(p)); err != nil {
		return err
	}
	people := isTable(f.output)
	if people {
		migrateview.Problems(out, p.Problems, p.Orphans, p.ProblemsLeftOut)
		fmt.Fprintln(out)
		fmt.Fprintln(out, migrateview.Summary(p))
	}
	if len(blocked) > 0 {
		return fmt.Errorf("%d connector(s) to overwrite still run in kcd: %s; stop them first (PUT /connectors/NAME/stop), or leave out --overwrite", len(blocked), strings.Join(blocked, ", "))
	}
	if f.dryRun || len(c.Connectors) == 0 {
		if people {
			fmt.Fprintln(out, "dry run: nothing changed")
		}
		return nil
	}
	rep := reporter(cmd)
	done, err := migrate.Apply(ctx, kcd, c, p, f.overwrite, rep.Report)
	rep.Stop()
	if err != nil {
		return err
	}
	if people {
		fmt.Fprintf(out, "import/%s done: %d source and %d sink offset(s) written, at revision %d\n", done.ID, done.SourceOffsets, done.SinkOffsets, done.Revision)
	}
	return nil
}

// warnRunning warns that running, connectors still running on the side
// a migration reads (from), would process the same records twice once
// started on the other side (to).
func warnRunning(cmd *cobra.Command, running []string, from, to string, stopSource, dryRun bool) {
	if len(running) == 0 {
		return
	}
	advice := "Stop them first, or pass --stop-source."
	switch {
	case stopSource && dryRun:
		advice = "--stop-source stops them when run without --dry-run."
	case stopSource:
		advice = "--stop-source leaves them running: this run does not write them (see the plan's action)."
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %d connector(s) still run on %s (%s): started in %s too, they would process the same records twice. %s\n",
		len(running), from, strings.Join(running, ", "), to, advice)
}

// stopConnectors stops names on the side a migration reads (where) and
// waits until they are stopped. It returns the ones it asked to stop,
// all of them even when it fails (some may be stopped then).
func stopConnectors(cmd *cobra.Command, live migrate.Live, names []string, where string) ([]string, error) {
	fmt.Fprintf(cmd.ErrOrStderr(), "stopping %d connector(s) on %s: %s\n", len(names), where, strings.Join(names, ", "))
	sctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
	defer cancel()
	return names, migrate.StopRunning(sctx, live, names)
}

// resumeHint tells, after a failure, which connectors this run stopped
// and how to start them again.
func resumeHint(cmd *cobra.Command, stopped []string, where, command string) {
	if len(stopped) == 0 {
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "The migration failed after it stopped %d connector(s) on %s: %s. They stay stopped there; to run them there again:\n  %s\n",
		len(stopped), where, strings.Join(stopped, ", "), command)
}

// resumeCommand is the kcctl command that resumes names on the cluster at
// p.url (kcctl speaks Kafka Connect's REST API), with p's credential flags
// as kcctl's global ones (never a password).
func resumeCommand(p *connectPeer, names []string) string {
	args := []string{"kcctl"}
	for _, f := range []struct{ flag, value string }{
		{"--server", p.url}, {"--user", p.user}, {"--password-file", p.passwordFile},
		{"--ca-file", p.caFile}, {"--client-cert", p.certFile}, {"--client-key", p.keyFile},
	} {
		if f.value != "" {
			args = append(args, f.flag, shellQuote(f.value))
		}
	}
	args = append(args, "resume", "connector")
	for _, n := range names {
		args = append(args, shellQuote(n))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell unless it needs none.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/=@%+", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// only keeps the names keep holds for, in order.
func only(names []string, keep func(string) bool) []string {
	var out []string
	for _, n := range names {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// without is names less those of drop, in order.
func without(names, drop []string) []string {
	return only(names, func(n string) bool { return !slices.Contains(drop, n) })
}

func newToKafkaCmd(g *globals) *cobra.Command {
	f := &migrateFlags{}
	var rf int16
	var stopSource bool
	cmd := &cobra.Command{
		Use:   "to-kafka",
		Short: "Write kcd's connectors, target states, task configs and offsets into Kafka Connect's internal topics",
		Long: `Reads every connector of the kcd cluster at --server and writes it into a Kafka Connect
cluster's internal topics in Kafka Connect's own format, and each sink's offsets into its
consumer group, so that Kafka Connect workers started on these topics run the connectors
from where kcd left them. Connectors that exist in the topics are left alone unless
--overwrite. Topics that do not exist are created as Kafka Connect creates them
(compacted; 1, 25 and 5 partitions).

Stop the connectors in kcd first, or they process the same records twice: kcctl warns
about connectors still running in kcd. With --stop-source, once a dry run has checked
the topics and groups, it stops the running connectors it writes, waits until they have
stored their offsets, reads them again and writes them with the target state they had
(STARTED); if the run fails after that, it prints the command that resumes them.

Each connector's config records go into one record batch, which Kafka appends whole or
not at all; a run cut short is completed by running it again (docs/migration.md).`,
		Example: `  kcctl migrate to-kafka --bootstrap-servers kafka:9092 --dry-run
  kcctl migrate to-kafka --bootstrap-servers kafka:9092 --config-topic connect-configs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runToKafka(cmd, g, f, rf, stopSource) },
	}
	f.add(cmd)
	cmd.Flags().Int16Var(&rf, "replication-factor", -1, "Replication factor of the topics it creates (-1: the broker's default)")
	cmd.Flags().BoolVar(&stopSource, "stop-source", false, "Once a dry run has checked the write, stop the connectors it writes that still run in kcd, and read them again")
	return cmd
}

func runToKafka(cmd *cobra.Command, g *globals, f *migrateFlags, rf int16, stopSource bool) (err error) {
	ctx := cmd.Context()
	include, err := f.filter()
	if err != nil {
		return err
	}
	kcd := g.client()
	cl, err := f.kafkaClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	running, err := migrate.Running(ctx, kcd, include)
	if err != nil {
		return err
	}
	c, err := migrate.Export(ctx, kcd, include)
	if err != nil {
		return err
	}
	write := func(c *migrate.Cluster, dryRun bool) (migrate.WriteResult, error) {
		rep := reporter(cmd)
		res, err := migrate.Write(ctx, cl, c, migrate.WriteOptions{Topics: f.topics, Overwrite: f.overwrite, DryRun: dryRun, ReplicationFactor: rf, Progress: rep.Report})
		rep.Stop()
		if err != nil {
			return res, migrate.ExplainError(err)
		}
		return res, nil
	}

	var toStop []string
	if stopSource && !f.dryRun && len(running) > 0 {
		// Everything that can refuse (the topics, busy groups) is checked by
		// a dry run before anything is stopped; only what it would write is.
		res, err := write(c, true)
		if err != nil {
			return err
		}
		written := map[string]bool{}
		for _, it := range res.Items {
			written[it.Name] = it.Action == migrate.ActionCreate || it.Action == migrate.ActionOverwrite
		}
		toStop = only(running, func(n string) bool { return written[n] })
	}
	warnRunning(cmd, without(running, toStop), "kcd", "Kafka Connect", stopSource, f.dryRun)
	if len(toStop) > 0 {
		before := migrate.Targets(c)
		// err is the function's result: any failure from here on names
		// the connectors stopped.
		var stopped []string
		defer func() {
			if err != nil {
				resumeHint(cmd, stopped, "kcd", resumeCommand(&connectPeer{url: g.conn.server}, stopped))
			}
		}()
		if stopped, err = stopConnectors(cmd, kcd, toStop, "kcd"); err != nil {
			return err
		}
		// Export again: the stop stored their last offsets.
		if c, err = migrate.Export(ctx, kcd, include); err != nil {
			return err
		}
		migrate.UnstopMigrated(c, stopped, before)
	}
	res, err := write(c, f.dryRun)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if err := printer.Print(out, f.output, migrateview.WritePrintable(res)); err != nil {
		return err
	}
	if isTable(f.output) {
		if f.dryRun {
			fmt.Fprintln(out, "dry run: nothing changed")
		} else {
			fmt.Fprintf(out, "%d config record(s) and %d offset record(s) written; %d consumer group(s) committed\n", res.ConfigRecords, res.OffsetRecords, len(res.Groups))
		}
	}
	return nil
}
