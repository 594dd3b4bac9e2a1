// ycsb-roaringd: go-ycsb's core workload and redis binding, driven the way
// bench/ycsb/run needs them, plus a bitmap driver (TR.GETBIT/TR.SETBIT or
// Redis's GETBIT/SETBIT over a many-key population) built on the same client
// library, key generators and histograms.
//
//	ycsb-roaringd load   -addr 127.0.0.1:6379 -records 1000000 [-p k=v ...]
//	ycsb-roaringd run    -addr ... -records N -w uniform-read|zipfian-read|uniform-update -duration 20 -warmup 3
//	ycsb-roaringd bitmap-load -addr ... -keys 100000 [-native]
//	ycsb-roaringd bitmap-run  -addr ... -keys 100000 -op getbit|setbit -dist uniform|zipfian -duration 10 [-native]
//
// Progress lines go to stderr; the result is one JSON object on stdout (or
// -out FILE). go-ycsb's redis binding prints two informational lines to
// stdout; the JSON is always the last line.
//
// Only the operations that start after the warm-up and end before the
// deadline are measured; QPS is their count over that window. Errors are
// classified: "notfound" (a nil reply, e.g. a GET of a key that is not
// there), "reply" (an error reply such as OOM), "timeout" (no reply within
// the client's read timeout) and "other" (connection refused, reset, ...).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	goredis "github.com/go-redis/redis/v9"
	"github.com/magiconair/properties"

	_ "github.com/pingcap/go-ycsb/db/redis" // registers the "redis" binding
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/generator"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers the "core" workload
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// ---------------------------------------------------------------- measuring

type opStats struct {
	hist     *hdrhistogram.Histogram // microseconds, successful operations
	errs     map[string]int64
	samples  []string
	outcount int64 // operations outside the window (warm-up, after the deadline)
}

func newOpStats() *opStats {
	return &opStats{hist: hdrhistogram.New(1, 60_000_000, 3), errs: map[string]int64{}}
}

type threadStats struct {
	ops map[string]*opStats
}

type recorder struct {
	mu       sync.Mutex
	threads  []*threadStats
	from     time.Time // measure operations starting at or after this
	until    time.Time // ... and ending at or before this (zero: no deadline)
	done     atomic.Int64
	errors   atomic.Int64
	stopping atomic.Bool
	lastOK   atomic.Int64 // unix nanos of the last successful reply
	gaveUp   atomic.Bool
	noReply  atomic.Bool // gave up because nothing succeeded any more
}

// loadEnd: when a load ended; the last successful reply when it gave up
// for want of replies (the server died), so that the rate covers the time
// the server was answering.
func (r *recorder) loadEnd(end time.Time) time.Time {
	if r.noReply.Load() {
		return time.Unix(0, r.lastOK.Load())
	}
	return end
}

// watchdog cancels the run when no operation has succeeded for `after`
// (the server died or stopped answering), so that a load against a killed
// server ends instead of failing key after key.
//
// With maxErrors > 0 it also stops the run once that many operations have
// failed (a server refusing writes at its memory limit).
//
// With limit > 0 it stops the run after that long (a load that crawls).
func (r *recorder) watchdog(ctx context.Context, cancel func(), after time.Duration, maxErrors int64, limit time.Duration) {
	begin := time.Now()
	r.lastOK.Store(begin.UnixNano())
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if limit > 0 && now.Sub(begin) > limit {
				fmt.Fprintf(os.Stderr, "time limit of %s reached: giving up\n", limit)
				r.gaveUp.Store(true)
				r.stopping.Store(true)
				cancel()
				return
			}
			if maxErrors > 0 && r.errors.Load() >= maxErrors {
				fmt.Fprintf(os.Stderr, "%d operations failed: giving up\n", r.errors.Load())
				r.gaveUp.Store(true)
				r.stopping.Store(true)
				cancel()
				return
			}
			if after > 0 && now.Sub(time.Unix(0, r.lastOK.Load())) > after {
				fmt.Fprintf(os.Stderr, "no successful reply for %s: giving up\n", after)
				r.noReply.Store(true)
				r.gaveUp.Store(true)
				r.stopping.Store(true)
				cancel()
				return
			}
		}
	}
}

func (r *recorder) newThread() *threadStats {
	t := &threadStats{ops: map[string]*opStats{}}
	r.mu.Lock()
	r.threads = append(r.threads, t)
	r.mu.Unlock()
	return t
}

func classify(err error) string {
	if errors.Is(err, goredis.Nil) {
		return "notfound"
	}
	var re goredis.Error
	if errors.As(err, &re) {
		return "reply"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "other"
}

func (r *recorder) record(t *threadStats, op string, start time.Time, err error) {
	end := time.Now()
	r.done.Add(1)
	if err == nil || errors.Is(err, goredis.Nil) {
		r.lastOK.Store(end.UnixNano())
	} else if !r.stopping.Load() {
		r.errors.Add(1)
	}
	s := t.ops[op]
	if s == nil {
		s = newOpStats()
		t.ops[op] = s
	}
	if start.Before(r.from) || (!r.until.IsZero() && end.After(r.until)) {
		s.outcount++
		return
	}
	if err != nil {
		c := classify(err)
		s.errs[c]++
		if len(s.samples) < 3 {
			s.samples = append(s.samples, c+": "+err.Error())
		}
		return
	}
	us := end.Sub(start).Microseconds()
	if us < 1 {
		us = 1
	}
	_ = s.hist.RecordValue(us)
}

type opResult struct {
	Count    int64            `json:"count"`
	QPS      float64          `json:"qps"`
	AvgUs    float64          `json:"avg_us"`
	P50Us    int64            `json:"p50_us"`
	P99Us    int64            `json:"p99_us"`
	P999Us   int64            `json:"p999_us"`
	MaxUs    int64            `json:"max_us"`
	Errors   map[string]int64 `json:"errors"`
	Samples  []string         `json:"error_samples,omitempty"`
	ErrTotal int64            `json:"error_total"`
}

type result struct {
	Mode     string               `json:"mode"`
	Label    string               `json:"label,omitempty"`
	Addr     string               `json:"addr"`
	Threads  int                  `json:"threads"`
	WindowS  float64              `json:"window_s"`
	Total    opResult             `json:"total"`
	Ops      map[string]*opResult `json:"ops"`
	Props    map[string]string    `json:"props,omitempty"`
	Extra    map[string]any       `json:"extra,omitempty"`
	GaveUp   bool                 `json:"gave_up"`
	Finished string               `json:"finished"`
}

func summarize(h *hdrhistogram.Histogram, errs map[string]int64, samples []string, window float64) *opResult {
	o := &opResult{Errors: map[string]int64{}, Samples: samples}
	o.Count = h.TotalCount()
	if window > 0 {
		o.QPS = float64(o.Count) / window
	}
	if o.Count > 0 {
		o.AvgUs = h.Mean()
		o.P50Us = h.ValueAtQuantile(50)
		o.P99Us = h.ValueAtQuantile(99)
		o.P999Us = h.ValueAtQuantile(99.9)
		o.MaxUs = h.Max()
	}
	for k, v := range errs {
		o.Errors[k] = v
		o.ErrTotal += v
	}
	return o
}

func (r *recorder) result(window float64) (opResult, map[string]*opResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	perOp := map[string]*hdrhistogram.Histogram{}
	perErr := map[string]map[string]int64{}
	perSamples := map[string][]string{}
	all := hdrhistogram.New(1, 60_000_000, 3)
	allErr := map[string]int64{}
	var allSamples []string
	for _, t := range r.threads {
		for op, s := range t.ops {
			if perOp[op] == nil {
				perOp[op] = hdrhistogram.New(1, 60_000_000, 3)
				perErr[op] = map[string]int64{}
			}
			perOp[op].Merge(s.hist)
			all.Merge(s.hist)
			for k, v := range s.errs {
				perErr[op][k] += v
				allErr[k] += v
			}
			for _, x := range s.samples {
				if len(perSamples[op]) < 3 {
					perSamples[op] = append(perSamples[op], x)
				}
				if len(allSamples) < 5 {
					allSamples = append(allSamples, op+" "+x)
				}
			}
		}
	}
	ops := map[string]*opResult{}
	for op, h := range perOp {
		ops[op] = summarize(h, perErr[op], perSamples[op], window)
	}
	return *summarize(all, allErr, allSamples, window), ops
}

// progress prints a line to stderr every `every` until ctx ends.
func (r *recorder) progress(ctx context.Context, label string, total int64, every time.Duration) {
	if every <= 0 {
		return
	}
	start := time.Now()
	last, lastT := int64(0), start
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d := r.done.Load()
			rate := float64(d-last) / now.Sub(lastT).Seconds()
			avg := float64(d) / now.Sub(start).Seconds()
			pct := ""
			if total > 0 {
				pct = fmt.Sprintf("/%d (%.1f%%)", total, 100*float64(d)/float64(total))
			}
			fmt.Fprintf(os.Stderr, "[%s] %6.1fs %d%s  %.0f ops/s now, %.0f ops/s avg  errors %d\n",
				label, now.Sub(start).Seconds(), d, pct, rate, avg, r.errors.Load())
			last, lastT = d, now
		}
	}
}

// ---------------------------------------------------------------- YCSB

// measuredDB wraps go-ycsb's redis binding: every operation is timed and its
// error classified into the calling thread's own histogram (no locking on
// the hot path).
type measuredDB struct {
	inner ycsb.DB
	rec   *recorder
}

type ctxKey struct{}

func (m *measuredDB) Close() error { return m.inner.Close() }

func (m *measuredDB) InitThread(ctx context.Context, id, n int) context.Context {
	ctx = m.inner.InitThread(ctx, id, n)
	return context.WithValue(ctx, ctxKey{}, m.rec.newThread())
}

func (m *measuredDB) CleanupThread(ctx context.Context) { m.inner.CleanupThread(ctx) }

func ts(ctx context.Context) *threadStats { return ctx.Value(ctxKey{}).(*threadStats) }

func (m *measuredDB) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	start := time.Now()
	v, err := m.inner.Read(ctx, table, key, fields)
	m.rec.record(ts(ctx), "READ", start, err)
	return v, err
}

func (m *measuredDB) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	start := time.Now()
	v, err := m.inner.Scan(ctx, table, startKey, count, fields)
	m.rec.record(ts(ctx), "SCAN", start, err)
	return v, err
}

func (m *measuredDB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	start := time.Now()
	err := m.inner.Update(ctx, table, key, values)
	m.rec.record(ts(ctx), "UPDATE", start, err)
	return err
}

func (m *measuredDB) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	start := time.Now()
	err := m.inner.Insert(ctx, table, key, values)
	m.rec.record(ts(ctx), "INSERT", start, err)
	return err
}

func (m *measuredDB) Delete(ctx context.Context, table, key string) error {
	start := time.Now()
	err := m.inner.Delete(ctx, table, key)
	m.rec.record(ts(ctx), "DELETE", start, err)
	return err
}

// The SSD whitepaper's record: one field of 100 bytes, stored by the redis
// binding as a string (JSON of the field map). Presets for its workloads.
var baseProps = map[string]string{
	"workload":                  "core",
	"redis.datatype":            "string",
	"fieldcount":                "1",
	"fieldlength":               "100",
	"readallfields":             "true",
	"writeallfields":            "true",
	"insertorder":               "hashed",
	"measurementtype":           "histogram",
	"measurement.interval":      "1000000", // go-ycsb's own periodic summary: off
	"scanproportion":            "0",
	"insertproportion":          "0",
	"readmodifywriteproportion": "0",
}

var presets = map[string]map[string]string{
	"uniform-read":   {"readproportion": "1", "updateproportion": "0", "requestdistribution": "uniform"},
	"zipfian-read":   {"readproportion": "1", "updateproportion": "0", "requestdistribution": "zipfian"},
	"uniform-update": {"readproportion": "0.5", "updateproportion": "0.5", "requestdistribution": "uniform"},
	"zipfian-update": {"readproportion": "0.5", "updateproportion": "0.5", "requestdistribution": "zipfian"},
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type common struct {
	addr     string
	threads  int
	duration float64
	warmup   float64
	progress float64
	giveUp   float64
	maxErrs  int64
	maxTime  float64
	label    string
	out      string
}

func commonFlags(fs *flag.FlagSet, c *common) {
	fs.StringVar(&c.addr, "addr", "127.0.0.1:6379", "server host:port")
	fs.IntVar(&c.threads, "threads", 32, "client threads (one connection each)")
	fs.Float64Var(&c.duration, "duration", 20, "seconds measured (run modes)")
	fs.Float64Var(&c.warmup, "warmup", 3, "seconds run before measuring (run modes)")
	fs.Float64Var(&c.progress, "progress", 2, "seconds between progress lines on stderr (0: none)")
	fs.Float64Var(&c.giveUp, "give-up", 10, "stop when no operation has succeeded for this many seconds (0: never)")
	fs.Int64Var(&c.maxErrs, "max-errors", 0, "stop once this many operations have failed (0: never)")
	fs.Float64Var(&c.maxTime, "time-limit", 0, "stop after this many seconds in all (0: no limit; loads)")
	fs.StringVar(&c.label, "label", "", "label for progress lines and the result")
	fs.StringVar(&c.out, "out", "", "write the JSON result to this file instead of stdout")
}

func emit(c *common, r *result, rec *recorder) {
	r.GaveUp = rec.gaveUp.Load()
	r.Finished = time.Now().Format(time.RFC3339)
	b, _ := json.Marshal(r)
	if c.out != "" {
		if err := os.WriteFile(c.out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	fmt.Fprintln(resultOut, string(b))
}

// resultOut: where the JSON result goes without -out (the real stdout).
var resultOut = os.Stdout

func ycsbMain(mode string, args []string) {
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	var c common
	commonFlags(fs, &c)
	records := fs.Int64("records", 1_000_000, "recordcount: records loaded / key space of the run")
	preset := fs.String("w", "uniform-read", "run preset: uniform-read, zipfian-read, uniform-update, zipfian-update")
	var props, propFiles multiFlag
	fs.Var(&props, "p", "a go-ycsb property name=value (repeatable; applied last)")
	fs.Var(&propFiles, "P", "a go-ycsb property file (repeatable)")
	_ = fs.Parse(args)

	p := properties.NewProperties()
	for k, v := range baseProps {
		p.Set(k, v)
	}
	if mode == "run" {
		pr, ok := presets[*preset]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown preset %q\n", *preset)
			os.Exit(2)
		}
		for k, v := range pr {
			p.Set(k, v)
		}
	}
	p.Set("redis.addr", c.addr)
	p.Set(prop.ThreadCount, strconv.Itoa(c.threads))
	p.Set(prop.RecordCount, strconv.FormatInt(*records, 10))
	if mode == "run" {
		p.Set(prop.OperationCount, "1000000000000") // bounded by -duration
	}
	for _, f := range propFiles {
		p.Merge(properties.MustLoadFile(f, properties.UTF8))
	}
	for _, kv := range props {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "bad property %q (want name=value)\n", kv)
			os.Exit(2)
		}
		p.Set(k, v)
	}
	doTx := mode == "run"
	p.Set(prop.DoTransactions, strconv.FormatBool(doTx))
	p.Set(prop.Command, mode)

	// go-ycsb's workload and binding print informational lines on stdout;
	// stdout is kept for the JSON result.
	stdout := os.Stdout
	os.Stdout = os.Stderr
	resultOut = stdout
	measurement.InitMeasure(p)
	wl, err := ycsb.GetWorkloadCreator(p.GetString(prop.Workload, "core")).Create(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "workload: %v\n", err)
		os.Exit(2)
	}
	inner, err := ycsb.GetDBCreator("redis").Create(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "redis binding: %v\n", err)
		os.Exit(2)
	}
	rec := &recorder{}
	db := &measuredDB{inner: inner, rec: rec}

	label := c.label
	if label == "" {
		label = mode
	}
	ctx, cancel := context.WithCancel(context.Background())
	pctx, pcancel := context.WithCancel(context.Background())
	total := int64(0)
	if !doTx {
		total = *records
	}
	go rec.progress(pctx, label, total, time.Duration(c.progress*float64(time.Second)))
	go rec.watchdog(pctx, cancel, time.Duration(c.giveUp*float64(time.Second)), c.maxErrs,
		time.Duration(c.maxTime*float64(time.Second)))

	start := time.Now()
	rec.from = start
	if doTx {
		rec.from = start.Add(time.Duration(c.warmup * float64(time.Second)))
		rec.until = rec.from.Add(time.Duration(c.duration * float64(time.Second)))
		go func() {
			time.Sleep(time.Until(rec.until))
			rec.stopping.Store(true)
			cancel()
		}()
	}
	client.NewClient(p, wl, db).Run(ctx)
	end := time.Now()
	pcancel()
	cancel()
	window := rec.loadEnd(end).Sub(start).Seconds()
	if doTx {
		window = rec.until.Sub(rec.from).Seconds()
		if end.Before(rec.until) {
			window = end.Sub(rec.from).Seconds()
		}
	}
	tot, ops := rec.result(window)
	shown := map[string]string{}
	for _, k := range []string{"recordcount", "threadcount", "fieldcount", "fieldlength", "redis.datatype",
		"readproportion", "updateproportion", "requestdistribution", "insertorder"} {
		if v, ok := p.Get(k); ok {
			shown[k] = v
		}
	}
	r := &result{Mode: mode, Label: c.label, Addr: c.addr, Threads: c.threads, WindowS: window,
		Total: tot, Ops: ops, Props: shown}
	if mode == "run" {
		r.Extra = map[string]any{"preset": *preset}
	}
	emit(&c, r, rec)
	wl.Close()
	db.Close()
}

// ---------------------------------------------------------------- bitmaps

const offsetRange = 10_000_000

// keyBits: the bits of key i of the many-key population, the same for every
// server: 100–200 random offsets in [0, 10^7).
func keyBits(seed, i int64) []int64 {
	r := rand.New(rand.NewSource(seed*1_000_000_007 + i))
	n := 100 + r.Intn(101)
	out := make([]int64, n)
	for j := range out {
		out[j] = r.Int63n(offsetRange)
	}
	return out
}

func keyName(prefix string, i int64) string { return prefix + strconv.FormatInt(i, 10) }

func newClient(addr string, pool int) *goredis.Client {
	return goredis.NewClient(&goredis.Options{
		Addr: addr, PoolSize: pool, MinIdleConns: pool, MaxRetries: -1,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		ConnMaxIdleTime: -1, ConnMaxLifetime: -1,
	})
}

func bitmapLoad(args []string) {
	fs := flag.NewFlagSet("bitmap-load", flag.ExitOnError)
	var c common
	commonFlags(fs, &c)
	keys := fs.Int64("keys", 100_000, "keys: bm:0 .. bm:N-1")
	seed := fs.Int64("seed", 7, "data seed")
	prefix := fs.String("prefix", "bm:", "key prefix")
	native := fs.Bool("native", false, "Redis: BITFIELD key SET u1 off 1 ... instead of TR.SETBITS key off ...")
	pipeline := fs.Int("pipeline", 50, "commands per pipelined write")
	_ = fs.Parse(args)
	if c.label == "" {
		c.label = "bitmap-load"
	}
	cl := newClient(c.addr, c.threads)
	defer cl.Close()
	ctx := context.Background()
	if err := cl.Ping(ctx).Err(); err != nil {
		fmt.Fprintf(os.Stderr, "ping %s: %v\n", c.addr, err)
		os.Exit(2)
	}
	rec := &recorder{from: time.Now()}
	pctx, pcancel := context.WithCancel(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go rec.progress(pctx, c.label, *keys, time.Duration(c.progress*float64(time.Second)))
	go rec.watchdog(pctx, cancel, time.Duration(c.giveUp*float64(time.Second)), c.maxErrs,
		time.Duration(c.maxTime*float64(time.Second)))
	var next atomic.Int64
	var bits atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for t := 0; t < c.threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th := rec.newThread()
			for ctx.Err() == nil {
				lo := next.Add(int64(*pipeline)) - int64(*pipeline)
				if lo >= *keys {
					return
				}
				hi := lo + int64(*pipeline)
				if hi > *keys {
					hi = *keys
				}
				pipe := cl.Pipeline()
				for i := lo; i < hi; i++ {
					offs := keyBits(*seed, i)
					bits.Add(int64(len(offs)))
					var a []any
					if *native {
						a = make([]any, 0, 2+4*len(offs))
						a = append(a, "BITFIELD", keyName(*prefix, i))
						for _, o := range offs {
							a = append(a, "SET", "u1", o, 1)
						}
					} else {
						a = make([]any, 0, 2+len(offs))
						a = append(a, "TR.SETBITS", keyName(*prefix, i))
						for _, o := range offs {
							a = append(a, o)
						}
					}
					pipe.Do(ctx, a...)
				}
				t0 := time.Now()
				cmds, perr := pipe.Exec(ctx)
				for _, cmd := range cmds {
					err := cmd.Err()
					// go-redis v9.0.0-rc.1 leaves the commands of a pipeline
					// that never got a connection (server gone, context
					// cancelled) without an error: only a reply read counts.
					if c, ok := cmd.(*goredis.Cmd); ok && err == nil && c.Val() == nil {
						err = perr
						if err == nil {
							err = errors.New("no reply")
						}
					}
					rec.record(th, "LOAD", t0, err)
				}
			}
		}()
	}
	wg.Wait()
	pcancel()
	window := rec.loadEnd(time.Now()).Sub(start).Seconds()
	tot, ops := rec.result(window)
	emit(&c, &result{Mode: "bitmap-load", Label: c.label, Addr: c.addr, Threads: c.threads, WindowS: window,
		Total: tot, Ops: ops, Extra: map[string]any{"keys": *keys, "bits": bits.Load(), "native": *native,
			"pipeline": *pipeline, "seed": *seed}}, rec)
}

func bitmapRun(args []string) {
	fs := flag.NewFlagSet("bitmap-run", flag.ExitOnError)
	var c common
	commonFlags(fs, &c)
	keys := fs.Int64("keys", 100_000, "keys drawn from bm:0 .. bm:N-1")
	prefix := fs.String("prefix", "bm:", "key prefix")
	op := fs.String("op", "getbit", "getbit or setbit")
	dist := fs.String("dist", "uniform", "key choice: uniform or zipfian (go-ycsb's scrambled zipfian, 0.99); offsets are uniform in [0, 10^7)")
	native := fs.Bool("native", false, "Redis's GETBIT/SETBIT instead of TR.GETBIT/TR.SETBIT")
	seed := fs.Int64("seed", 1, "draw seed (thread i uses seed+i)")
	_ = fs.Parse(args)
	if c.label == "" {
		c.label = "bitmap-" + *op + "-" + *dist
	}
	var name string
	switch {
	case *op == "getbit" && *native:
		name = "GETBIT"
	case *op == "getbit":
		name = "TR.GETBIT"
	case *op == "setbit" && *native:
		name = "SETBIT"
	case *op == "setbit":
		name = "TR.SETBIT"
	default:
		fmt.Fprintf(os.Stderr, "unknown -op %q\n", *op)
		os.Exit(2)
	}
	if *dist != "uniform" && *dist != "zipfian" {
		fmt.Fprintf(os.Stderr, "unknown -dist %q\n", *dist)
		os.Exit(2)
	}
	cl := newClient(c.addr, c.threads)
	defer cl.Close()
	bg := context.Background()
	if err := cl.Ping(bg).Err(); err != nil {
		fmt.Fprintf(os.Stderr, "ping %s: %v\n", c.addr, err)
		os.Exit(2)
	}
	rec := &recorder{}
	start := time.Now()
	rec.from = start.Add(time.Duration(c.warmup * float64(time.Second)))
	rec.until = rec.from.Add(time.Duration(c.duration * float64(time.Second)))
	ctx, cancel := context.WithDeadline(bg, rec.until)
	defer cancel()
	pctx, pcancel := context.WithCancel(bg)
	go rec.progress(pctx, c.label, 0, time.Duration(c.progress*float64(time.Second)))
	go rec.watchdog(pctx, cancel, time.Duration(c.giveUp*float64(time.Second)), c.maxErrs,
		time.Duration(c.maxTime*float64(time.Second)))
	var wg sync.WaitGroup
	var ones atomic.Int64
	for t := 0; t < c.threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			th := rec.newThread()
			r := rand.New(rand.NewSource(*seed + int64(t)))
			var g ycsb.Generator
			if *dist == "zipfian" {
				g = generator.NewScrambledZipfian(0, *keys-1, generator.ZipfianConstant)
			} else {
				g = generator.NewUniform(0, *keys-1)
			}
			for ctx.Err() == nil {
				k := keyName(*prefix, g.Next(r))
				off := r.Int63n(offsetRange)
				t0 := time.Now()
				var cmd *goredis.Cmd
				if *op == "getbit" {
					cmd = cl.Do(ctx, name, k, off)
				} else {
					cmd = cl.Do(ctx, name, k, off, 1)
				}
				if ctx.Err() != nil {
					rec.stopping.Store(true)
				}
				rec.record(th, name, t0, cmd.Err())
				if v, err := cmd.Int64(); err == nil && v == 1 {
					ones.Add(1)
				}
			}
		}(t)
	}
	wg.Wait()
	pcancel()
	window := rec.until.Sub(rec.from).Seconds()
	if end := time.Now(); end.Before(rec.until) {
		window = end.Sub(rec.from).Seconds()
	}
	tot, ops := rec.result(window)
	emit(&c, &result{Mode: "bitmap-run", Label: c.label, Addr: c.addr, Threads: c.threads, WindowS: window,
		Total: tot, Ops: ops, Extra: map[string]any{"keys": *keys, "op": name, "dist": *dist,
			"replies_one_all": ones.Load(), "seed": *seed}}, rec)
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: ycsb-roaringd load|run|bitmap-load|bitmap-run [flags]   (-h after the mode for its flags)`)
	names := make([]string, 0, len(presets))
	for k := range presets {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, "run presets:", strings.Join(names, ", "))
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "load", "run":
		ycsbMain(os.Args[1], os.Args[2:])
	case "bitmap-load":
		bitmapLoad(os.Args[2:])
	case "bitmap-run":
		bitmapRun(os.Args[2:])
	default:
		usage()
	}
}
