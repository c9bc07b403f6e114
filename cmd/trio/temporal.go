package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/dist/flow"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/llm"
)

// Environment variables of the Temporal commands (the first two are the
// Temporal SDK's and CLI's usual names).
const (
	envTemporalAddress   = "TEMPORAL_ADDRESS"
	envTemporalNamespace = "TEMPORAL_NAMESPACE"
	// envStore is the store every worker and client of a cluster shares
	// (a folder: a shared mount for several machines).
	envStore = "TRIO_STORE"
)

// temporalFlags are how a command reaches Temporal and the store.
type temporalFlags struct {
	address, namespace, store string
}

func (t *temporalFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.address, "temporal-address", "", "Temporal frontend host:port (default $"+envTemporalAddress+", else localhost:7233)")
	cmd.Flags().StringVar(&t.namespace, "temporal-namespace", "", "Temporal namespace (default $"+envTemporalNamespace+", else default)")
	cmd.Flags().StringVar(&t.store, "store", "", "the store shared by workers and clients: a folder or s3://BUCKET/PREFIX (default $"+envStore+")")
}

func (t *temporalFlags) dial() (client.Client, error) {
	addr, ns := t.address, t.namespace
	if addr == "" {
		addr = os.Getenv(envTemporalAddress)
	}
	if addr == "" {
		addr = client.DefaultHostPort
	}
	if ns == "" {
		ns = os.Getenv(envTemporalNamespace)
	}
	if ns == "" {
		ns = client.DefaultNamespace
	}
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: ns,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		return nil, failure(fmt.Errorf("temporal at %s (namespace %s): %w", addr, ns, err))
	}
	return c, nil
}

func (t *temporalFlags) openStore() (store.Store, error) {
	loc := t.store
	if loc == "" {
		loc = os.Getenv(envStore)
	}
	if loc == "" {
		return nil, configError(fmt.Errorf("no store: give --store DIR or set %s (a folder every worker reaches, or s3://BUCKET/PREFIX)", envStore))
	}
	if strings.Contains(loc, "://") {
		cfg, err := s3Config(loc)
		if err != nil {
			return nil, configError(err)
		}
		s, err := store.NewS3(context.Background(), cfg)
		if err != nil {
			return nil, configError(fmt.Errorf("store %s: %w", loc, err))
		}
		return s, nil
	}
	s, err := store.NewFolder(loc)
	if err != nil {
		return nil, configError(err)
	}
	return s, nil
}

// s3Config is the S3 store a URL s3://BUCKET[/PREFIX] names. The endpoint
// is the AWS SDK's (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS
// S3 in the region); with an endpoint of its own (MinIO, R2) the bucket
// goes in the path, which they all serve. Credentials and region are the
// SDK's (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION, profiles).
func s3Config(loc string) (store.S3Config, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return store.S3Config{}, fmt.Errorf("store %q: %w", loc, err)
	}
	if u.Scheme != "s3" {
		return store.S3Config{}, fmt.Errorf("store %q: want a folder or s3://BUCKET/PREFIX", loc)
	}
	if u.Host == "" || u.User != nil || u.Port() != "" || u.RawQuery != "" || u.Fragment != "" {
		return store.S3Config{}, fmt.Errorf("store %q: want s3://BUCKET/PREFIX (a bucket, then an optional prefix)", loc)
	}
	_, custom := os.LookupEnv("AWS_ENDPOINT_URL_S3")
	if !custom {
		_, custom = os.LookupEnv("AWS_ENDPOINT_URL")
	}
	return store.S3Config{Bucket: u.Host, Prefix: u.Path, UsePathStyle: custom}, nil
}

// storeName is where st is, for logs: its folder or s3://bucket/prefix.
func storeName(st store.Store) string {
	if f, ok := st.(*store.Folder); ok {
		return f.Dir()
	}
	return fmt.Sprint(st)
}

// newWorkerCmd is trio worker: it serves the shared queue (workflows and
// placements) and this host's own queue (sessions).
func newWorkerCmd(g *globals, io stdio) *cobra.Command {
	var (
		tf       temporalFlags
		name     string
		dir      string
		parallel int
		sbKind   string
		polFlag  string
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Serve runs from Temporal on this host (trio run --temporal submits them)",
		Long: `Worker connects to a Temporal frontend and serves two task queues: the shared
queue "trio" (run workflows and their placements) and this host's own queue
(trio-host-NAME), where the sessions of the runs placed here run in-process,
as trio resume runs them. After every checkpoint a session commits the
run's workspace and records to the store; when a host dies, its sessions
stop heartbeating and their runs move to another worker, which restores
the last commit and resumes (only the call in flight runs again).

The model is this worker's: the endpoint of trio.yaml and the environment,
or the script of $TRIO_SCRIPT (an eval task's run: its replay script). Runs live in
--dir/runs/<run-id>, their workspaces in --dir/workspaces/<run-id>.

Two workers on one machine need different --name values (the default,
host name and pid, differs) and different --dir folders.

` + exitCodesHelp,
		Example: `  temporal server start-dev --headless &
  export TRIO_STORE=/srv/trio-store
  trio worker --dir /var/tmp/trio-a --parallel 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if parallel < 1 {
				return configError(fmt.Errorf("--parallel %d: want at least 1", parallel))
			}
			st, err := tf.openStore()
			if err != nil {
				return err
			}
			cfg, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			pol, _, err := loadPolicy(polFlag, cfg, false)
			if err != nil {
				return err
			}
			if name == "" {
				h, _ := os.Hostname()
				name = fmt.Sprintf("%s-%d", h, os.Getpid())
			}
			rec := runRecord{Model: "endpoint", Sandbox: sbKind}
			if path := os.Getenv(envScript); path != "" {
				rec.Model, rec.Script = "script", abs(path)
			}
			// Fail at the start, not in the first session.
			if _, closeModel, err := modelOf(rec, cfg); err != nil {
				return err
			} else {
				closeModel()
			}
			run := func(ctx context.Context, call flow.Call) (string, error) {
				model, closeModel, err := sessionModel(rec, cfg, call.Spec)
				if err != nil {
					return "", err
				}
				defer closeModel()
				opts := append(agentOptions(cfg, workerModelName(cfg)),
					agent.WithSandboxConfig(sandboxConfig(sbKind, cfg)), agent.WithMetadata(rec.metadata()))
				return flow.AgentRunner(model, pol, opts...)(ctx, call)
			}
			logf := func(format string, args ...any) { fmt.Fprintf(io.err, format+"\n", args...) }
			host := &flow.Host{Name: name, Store: st, Root: abs(dir), Run: run, Logf: logf, Sessions: parallel}
			c, err := tf.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			shared := worker.New(c, flow.SharedQueue, worker.Options{})
			shared.RegisterWorkflowWithOptions(flow.Run, workflow.RegisterOptions{Name: flow.RunWorkflow})
			shared.RegisterWorkflowWithOptions(flow.Eval, workflow.RegisterOptions{Name: flow.EvalWorkflow})
			shared.RegisterActivityWithOptions(host.Place, activity.RegisterOptions{Name: flow.PlaceActivity})
			own := worker.New(c, host.Queue(), worker.Options{MaxConcurrentActivityExecutionSize: parallel})
			own.RegisterActivityWithOptions(host.Session, activity.RegisterOptions{Name: flow.SessionActivity})
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := own.Start(); err != nil {
				return failure(err)
			}
			defer own.Stop()
			if err := shared.Start(); err != nil {
				return failure(err)
			}
			defer shared.Stop()
			logf("trio worker: %s serving %s and %s (%d sessions at a time), runs in %s, store %s", name, flow.SharedQueue, host.Queue(), parallel, filepath.Join(host.Root, "runs"), storeName(st))
			<-ctx.Done()
			logf("trio worker: %s stopping", name)
			return nil
		},
	}
	tf.add(cmd)
	cmd.Flags().StringVar(&name, "name", "", "this worker's name, unique among workers; its queue is trio-host-NAME (default host name and pid)")
	cmd.Flags().StringVar(&dir, "dir", "trio-worker", "folder of the runs placed on this worker")
	cmd.Flags().IntVar(&parallel, "parallel", 1, "sessions run at once on this worker")
	cmd.Flags().StringVar(&sbKind, "sandbox", "", "where commands run (as for trio run)")
	cmd.Flags().StringVar(&polFlag, "policy", "", "policy file (default: policy of trio.yaml, else the built-in strict policy)")
	return cmd
}

// sessionModel is the model of a session: the run's own replay script
// (an eval task's, from its spec), else the worker's.
func sessionModel(rec runRecord, cfg *config.File, spec flow.Spec) (llm.Model, func(), error) {
	if spec.Replay == "" {
		return modelOf(rec, cfg)
	}
	s, err := llm.ParseScript("replay", []byte(spec.Replay))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the run's replay script: %v", agent.ErrInvalidInput, err)
	}
	ep, err := demo.ServeScript(s)
	if err != nil {
		return nil, nil, err
	}
	return ep, ep.Close, nil
}

// newRunID is a run id of the same shape as the agent's: a UTC time and a
// random suffix.
func newRunID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// withTemporalRun adds --temporal to trio run: the goal goes to the store
// and the run to Temporal, where a worker runs it.
func withTemporalRun(cmd *cobra.Command, g *globals, io stdio) *cobra.Command {
	var (
		on    bool
		tf    temporalFlags
		runID string
		wait  bool
		hb    time.Duration
	)
	local := cmd.RunE
	cmd.Flags().BoolVar(&on, "temporal", false, "submit the run to Temporal, where a trio worker runs it (see trio worker)")
	cmd.Flags().StringVar(&runID, "run-id", "", "with --temporal: the run's id, which is its workflow's (a second submission of an id runs nothing)")
	cmd.Flags().BoolVar(&wait, "wait", false, "with --temporal: wait for the run to end, exit with its code")
	cmd.Flags().DurationVar(&hb, "heartbeat-timeout", time.Minute, "with --temporal: how long a session may be silent before the run moves to another worker")
	tf.add(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !on {
			return local(cmd, args)
		}
		fl := cmd.Flags()
		// What a worker's session would not honour is refused, not dropped.
		for _, name := range []string{"workspace", "tests", "tests-with-designed", "reuse-workspace", "model", "reasoning", "sandbox", "trust-config", "json"} {
			if fl.Changed(name) {
				return configError(fmt.Errorf("--%s does not go with --temporal: a run on Temporal uses the worker's settings and workspace", name))
			}
		}
		f := &runFlags{}
		f.goal, _ = fl.GetString("goal")
		f.goalFile, _ = fl.GetString("goal-file")
		f.policy, _ = fl.GetString("policy")
		f.unattended, _ = fl.GetBool("unattended")
		cfg, err := loadConfig(g.config)
		if err != nil {
			return err
		}
		goal, err := readGoal(f, cfg.Budgets.MaxGoalBytes)
		if err != nil {
			return err
		}
		pol, _, err := loadPolicy(f.policy, cfg, f.unattended)
		if err != nil {
			return err
		}
		st, err := tf.openStore()
		if err != nil {
			return err
		}
		if runID == "" {
			runID = newRunID()
		}
		in := flow.RunInput{RunID: runID, ConfirmTimeout: pol.ConfirmTimeout(), HeartbeatTimeout: hb}
		if f.unattended {
			in.ConfirmTimeout = 0 // nobody answers: ask is no
		}
		ctx := cmd.Context()
		if err := flow.SaveGoal(ctx, st, runID, goal); err != nil {
			return failure(err)
		}
		c, err := tf.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		run, started, err := flow.Submit(ctx, c, in)
		if err != nil {
			return failure(err)
		}
		if started {
			fmt.Fprintf(io.err, "trio: run %s submitted to Temporal (workflow %s); trio status %s tells where it is\n", runID, run.GetID(), runID)
		} else {
			fmt.Fprintf(io.err, "trio: run %s was submitted before: nothing new started\n", runID)
		}
		fmt.Fprintln(io.out, runID)
		if !wait {
			return nil
		}
		var res flow.Result
		if err := run.Get(ctx, &res); err != nil {
			return failure(fmt.Errorf("run %s: %w", runID, err))
		}
		fmt.Fprintf(io.err, "trio: run %s ended: %s (after %d moves)\n", runID, res.Reason, res.Moves)
		if code := exitCode(agent.StopReason(res.Reason)); code != exitOK {
			return &exitError{code: code}
		}
		return nil
	}
	return cmd
}

// newStatusCmd is trio status RUN: where a Temporal run is.
func newStatusCmd(io stdio) *cobra.Command {
	var (
		tf     temporalFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status RUN",
		Short: "Where a run submitted with trio run --temporal is: its host, epoch, moves, a pending confirmation",
		Long: `Status asks the run's workflow where the run is: placing, running on a
worker, waiting for a confirmation (with the tool, the command or path, the
rule and the reason), finished or failed; its epoch (one per session), how
many times it moved and the workers it was lost on. A worker must be
running: workflows answer queries through workers.

` + exitCodesHelp,
		Example: `  trio status 20261204-054446-d504c1
  trio status --json 20261204-054446-d504c1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := tf.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := flow.QueryStatus(cmd.Context(), c, args[0])
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				return configError(fmt.Errorf("no Temporal run %s", args[0]))
			}
			if err != nil {
				return failure(err)
			}
			if asJSON {
				b, _ := json.MarshalIndent(st, "", "  ")
				fmt.Fprintln(io.out, string(b))
				return nil
			}
			fmt.Fprintf(io.out, "run %s: %s", st.RunID, st.State)
			if st.Host != "" {
				fmt.Fprintf(io.out, " on %s", st.Host)
			}
			fmt.Fprintf(io.out, " (epoch %d, %d moves) since %s\n", st.Epoch, st.Moves, st.Since.Format(time.RFC3339))
			if len(st.Lost) > 0 {
				fmt.Fprintf(io.out, "  lost on: %s\n", strings.Join(st.Lost, ", "))
			}
			if p := st.Pending; p != nil {
				what := p.Command
				if what == "" {
					what = p.Path
				}
				fmt.Fprintf(io.out, "  asks: %s %s %s\n  rule: %s\n  reason: %s\n  answer with: trio confirm %s yes|no|always (no answer within %s = no)\n",
					p.Tool, p.Action, what, p.Rule, p.Reason, st.RunID, p.Timeout)
			}
			return nil
		},
	}
	tf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// newConfirmCmd is trio confirm RUN [yes|no|always]: the answer to a
// Temporal run's pending request.
func newConfirmCmd(io stdio) *cobra.Command {
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "confirm RUN [yes|no|always]",
		Short: "Answer the pending confirmation of a run submitted with trio run --temporal (default yes)",
		Long: `Confirm answers the request a Temporal run is waiting for (trio status shows
it): yes once, no, or always (every later action under the same rule, for
the rest of the run). The run resumes on a worker with the answer. No answer
within the policy's confirm.timeout is no. A run that asks nothing exits 3.

` + exitCodesHelp,
		Example: `  trio confirm 20261204-054446-d504c1
  trio confirm 20261204-054446-d504c1 no`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			answer := "yes"
			if len(args) == 2 {
				answer = args[1]
			}
			switch answer {
			case "yes", "no", "always":
			default:
				return configError(fmt.Errorf("answer %q: want yes, no or always", answer))
			}
			c, err := tf.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx := cmd.Context()
			st, err := flow.QueryStatus(ctx, c, args[0])
			if err != nil {
				return failure(err)
			}
			if st.Pending == nil {
				return configError(fmt.Errorf("run %s asks nothing now (%s)", args[0], st.State))
			}
			by, _ := os.Hostname()
			if u := os.Getenv("USER"); u != "" {
				by = u + "@" + by
			}
			if err := flow.Confirm(ctx, c, args[0], flow.Answer{Key: st.Pending.Key, Answer: answer, By: by}); err != nil {
				return failure(err)
			}
			fmt.Fprintf(io.err, "trio: run %s: %s to %s %s\n", args[0], answer, st.Pending.Tool, st.Pending.Command+st.Pending.Path)
			return nil
		},
	}
	tf.add(cmd)
	return cmd
}
