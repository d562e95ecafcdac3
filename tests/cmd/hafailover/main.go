// Command hafailover measures one failover of a running controller-mode
// topology (ours or Apache's) for scripts/bench/ha.sh. It kills the victim
// itself with SIGKILL, so the clock starts at the kill, and prints one JSON
// line; restarting the victim is the caller's job.
//
//	hafailover broker -n ns1;ns2;ns3 -t Topic -pids 127.0.0.1:10911=1234,...
//	    a producer (pkg/client, 100 ms route refresh) sends continuously;
//	    once sends succeed, the broker-set master (route id 0) is killed;
//	    prints the ms from the kill to the first SEND_OK stored on
//	    another broker (the store host in the offset message id).
//	hafailover controller -pids 127.0.0.1:9880=1235,...
//	    kills the raft leader controller (as GET_METADATA_INFO names it)
//	    and prints the ms until a survivor names a new leader that itself
//	    answers isLeader=true.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

type result struct {
	Kind    string  `json:"kind"`
	Killed  string  `json:"killed"`
	NewAddr string  `json:"new"`
	Ms      float64 `json:"ms"`
	// SendErrors counts failed sends between the kill and the first
	// SEND_OK on the new master (broker rounds only).
	SendErrors int `json:"sendErrors,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hafailover broker|controller [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	ns := fs.String("n", "", "nameservers, a;b;c (broker)")
	topic := fs.String("t", "BenchHA", "topic (broker)")
	pidList := fs.String("pids", "", "addr=pid,... of every broker (broker) or controller (controller)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long from the kill")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	pids, err := parsePids(*pidList)
	if err != nil {
		fail(err)
	}
	var res result
	switch os.Args[1] {
	case "broker":
		res, err = brokerRound(admin.ParseNameServers(*ns), *topic, pids, *timeout)
	case "controller":
		res, err = controllerRound(pids, *timeout)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hafailover:", err)
	os.Exit(1)
}

func parsePids(s string) (map[string]int, error) {
	m := map[string]int{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		addr, p, ok := strings.Cut(kv, "=")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil {
			return nil, fmt.Errorf("bad -pids item %q", kv)
		}
		m[addr] = pid
	}
	if len(m) == 0 {
		return nil, errors.New("-pids is empty")
	}
	return m, nil
}

// storeHostPort reads the port of the store host out of an offset message
// id: hex of a 4-byte IPv4 address, a 4-byte port and an 8-byte offset.
func storeHostPort(offsetID string) (int, error) {
	b, err := hex.DecodeString(offsetID)
	if err != nil || len(b) != 16 {
		return 0, fmt.Errorf("offset message id %q is not an IPv4 one", offsetID)
	}
	return int(b[4])<<24 | int(b[5])<<16 | int(b[6])<<8 | int(b[7]), nil
}

func portOf(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	p, _ := strconv.Atoi(addr[i+1:])
	return p
}

func brokerRound(ns []string, topic string, pids map[string]int, timeout time.Duration) (result, error) {
	res := result{Kind: "broker"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := client.NewProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: ns, RouteRefreshInterval: 100 * time.Millisecond,
			HeartbeatInterval: time.Second, RequestTimeout: 3 * time.Second},
		Group: "HA_FAILOVER_BENCH", SendTimeout: 3 * time.Second,
	})
	if err != nil {
		return res, fmt.Errorf("producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return res, fmt.Errorf("start producer: %w", err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()

	// Steady state first: the master answers SEND_OK.
	master := ""
	deadline := time.Now().Add(timeout)
	for master == "" {
		if time.Now().After(deadline) {
			return res, errors.New("no SEND_OK before the kill")
		}
		r, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: []byte("warm-up")})
		if err != nil || r.Status != client.SendOK {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		port, err := storeHostPort(r.OffsetMsgID)
		if err != nil {
			return res, err
		}
		for addr := range pids {
			if portOf(addr) == port {
				master = addr
			}
		}
		if master == "" {
			return res, fmt.Errorf("SEND_OK from port %d, not in -pids", port)
		}
	}
	res.Killed = master

	// Senders keep going through the kill; the first SEND_OK from another
	// store host ends the round.
	var (
		mu     sync.Mutex
		killAt time.Time
		done   = make(chan struct{})
		once   sync.Once
	)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: []byte("failover")})
				now := time.Now()
				mu.Lock()
				killed := !killAt.IsZero()
				if killed && (err != nil || r.Status != client.SendOK) {
					res.SendErrors++
				}
				mu.Unlock()
				if err != nil || r.Status != client.SendOK || !killed {
					if err != nil {
						time.Sleep(20 * time.Millisecond)
					}
					continue
				}
				port, perr := storeHostPort(r.OffsetMsgID)
				if perr != nil || port == portOf(master) {
					continue
				}
				once.Do(func() {
					mu.Lock()
					res.Ms = float64(now.Sub(killAt).Microseconds()) / 1000
					mu.Unlock()
					res.NewAddr = "127.0.0.1:" + strconv.Itoa(port)
					close(done)
				})
			}
		}()
	}
	time.Sleep(time.Second)
	mu.Lock()
	killAt = time.Now()
	err = syscall.Kill(pids[master], syscall.SIGKILL)
	mu.Unlock()
	if err != nil {
		cancel()
		wg.Wait()
		return res, fmt.Errorf("kill %s (pid %d): %w", master, pids[master], err)
	}
	select {
	case <-done:
	case <-time.After(timeout):
		cancel()
		wg.Wait()
		return res, fmt.Errorf("no SEND_OK on another broker within %v of killing %s", timeout, master)
	}
	cancel()
	wg.Wait()
	return res, nil
}

func controllerRound(pids map[string]int, timeout time.Duration) (result, error) {
	res := result{Kind: "controller"}
	adm, err := admin.New(admin.Config{Timeout: time.Second}, nil)
	if err != nil {
		return res, fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	ctx := context.Background()
	leader := ""
	deadline := time.Now().Add(timeout)
	for leader == "" {
		for addr := range pids {
			if md, err := adm.GetControllerMetaData(ctx, addr); err == nil && md.IsLeader {
				leader = addr
			}
		}
		if time.Now().After(deadline) {
			return res, errors.New("no controller leader before the kill")
		}
		if leader == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	res.Killed = leader
	killAt := time.Now()
	if err := syscall.Kill(pids[leader], syscall.SIGKILL); err != nil {
		return res, fmt.Errorf("kill %s (pid %d): %w", leader, pids[leader], err)
	}
	for time.Since(killAt) < timeout {
		for addr := range pids {
			if addr == leader {
				continue
			}
			md, err := adm.GetControllerMetaData(ctx, addr)
			if err != nil || md.LeaderAddress == "" || md.LeaderAddress == leader {
				continue
			}
			// The named leader must agree that it leads.
			if lmd, err := adm.GetControllerMetaData(ctx, md.LeaderAddress); err == nil && lmd.IsLeader {
				res.Ms = float64(time.Since(killAt).Microseconds()) / 1000
				res.NewAddr = md.LeaderAddress
				return res, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return res, fmt.Errorf("no new controller leader within %v of killing %s", timeout, leader)
}
