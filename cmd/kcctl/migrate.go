package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
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
with --connect-url, kcctl checks and warns, and with --stop-source stops them there
and waits for their offsets to be committed before reading.`,
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
	cmd.Flags().BoolVar(&stopSource, "stop-source", false, "Stop the connectors still running on the Kafka Connect cluster before reading (needs --connect-url)")
	return cmd
}

func runFromKafka(cmd *cobra.Command, g *globals, f *migrateFlags, connect *connectPeer, stopSource bool) error {
	ctx := cmd.Context()
	include, err := f.filter()
	if err != nil {
		return err
	}
	kcd := g.client()
	var stopped []string
	if connect.url != "" {
		kc, err := connect.client()
		if err != nil {
			return err
		}
		if stopped, err = stopOrWarn(cmd, kc, include, stopSource && !f.dryRun, "Kafka Connect", "kcd"); err != nil {
			return err
		}
	}
	cl, err := f.kafkaClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	rep := reporter(cmd)
	c, err := migrate.Read(ctx, cl, migrate.ReadOptions{Topics: f.topics, Include: include, Progress: rep.Report})
	rep.Stop()
	if err != nil {
		return migrate.ExplainError(err)
	}
	migrate.UnstopMigrated(c, stopped)
	plugins, err := kcd.Plugins(ctx, false)
	if err != nil {
		return fmt.Errorf("list kcd's plugins: %w", err)
	}
	cat := make([]migrate.Plugin, len(plugins))
	for i, p := range plugins {
		cat[i] = migrate.Plugin{Class: p.Class, Type: string(p.Type), Version: p.Version}
	}
	plan := migrate.BuildPlan(c, migrate.NewCatalogue(cat))
	imp := kcd
	if len(c.Connectors) > 0 {
		dry, err := imp.Import(ctx, plan.ImportRequest(c, f.overwrite, true))
		if err != nil {
			return fmt.Errorf("check the plan with kcd: %w", err)
		}
		plan.SetActions(dry.Items)
	}
	out := cmd.OutOrStdout()
	if err := printer.Print(out, f.output, migrateview.PlanPrintable(plan)); err != nil {
		return err
	}
	people := isTable(f.output)
	if people {
		migrateview.Problems(out, plan.Problems, plan.Orphans)
		fmt.Fprintln(out)
		fmt.Fprintln(out, migrateview.Summary(plan))
	}
	if b := plan.Blocked(); len(b) > 0 {
		return fmt.Errorf("%d connector(s) to overwrite still run in kcd: %s; stop them first (PUT /connectors/NAME/stop), or leave out --overwrite", len(b), strings.Join(b, ", "))
	}
	if f.dryRun || len(c.Connectors) == 0 {
		if people {
			fmt.Fprintln(out, "dry run: nothing changed")
		}
		return nil
	}
	rep = reporter(cmd)
	done, err := migrate.Apply(ctx, imp, c, plan, f.overwrite, rep.Report)
	rep.Stop()
	if err != nil {
		return err
	}
	if people {
		fmt.Fprintf(out, "import/%s done: %d source and %d sink offset(s) written, at revision %d\n", done.ID, done.SourceOffsets, done.SinkOffsets, done.Revision)
	}
	return nil
}

// stopOrWarn finds the connectors include keeps that still run on the
// cluster a migration reads (from), and stops them there when stop (and
// waits until they are), else warns that they would run twice once
// started on the other side (to). It returns the ones it stopped.
func stopOrWarn(cmd *cobra.Command, live migrate.Live, include func(string) bool, stop bool, from, to string) ([]string, error) {
	ctx := cmd.Context()
	running, err := migrate.Running(ctx, live, include)
	if err != nil || len(running) == 0 {
		return nil, err
	}
	if !stop {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %d connector(s) still run on %s (%s): started in %s too, they would process the same records twice. Stop them first, or pass --stop-source.\n",
			len(running), from, strings.Join(running, ", "), to)
		return nil, nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "stopping %d connector(s) on %s: %s\n", len(running), from, strings.Join(running, ", "))
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := migrate.StopRunning(sctx, live, running); err != nil {
		return nil, err
	}
	return running, nil
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
about connectors still running in kcd, and with --stop-source stops them and waits
until they have stored their offsets; those are written with the target state they
had (STARTED).`,
		Example: `  kcctl migrate to-kafka --bootstrap-servers kafka:9092 --dry-run
  kcctl migrate to-kafka --bootstrap-servers kafka:9092 --config-topic connect-configs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runToKafka(cmd, g, f, rf, stopSource) },
	}
	f.add(cmd)
	cmd.Flags().Int16Var(&rf, "replication-factor", -1, "Replication factor of the topics it creates (-1: the broker's default)")
	cmd.Flags().BoolVar(&stopSource, "stop-source", false, "Stop the connectors still running in kcd before reading them")
	return cmd
}

func runToKafka(cmd *cobra.Command, g *globals, f *migrateFlags, rf int16, stopSource bool) error {
	ctx := cmd.Context()
	include, err := f.filter()
	if err != nil {
		return err
	}
	kcd := g.client()
	stopped, err := stopOrWarn(cmd, kcd, include, stopSource && !f.dryRun, "kcd", "Kafka Connect")
	if err != nil {
		return err
	}
	c, err := migrate.Export(ctx, kcd, include)
	if err != nil {
		return err
	}
	migrate.UnstopMigrated(c, stopped)
	cl, err := f.kafkaClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	rep := reporter(cmd)
	res, err := migrate.Write(ctx, cl, c, migrate.WriteOptions{Topics: f.topics, Overwrite: f.overwrite, DryRun: f.dryRun, ReplicationFactor: rf, Progress: rep.Report})
	rep.Stop()
	if err != nil {
		return migrate.ExplainError(err)
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
