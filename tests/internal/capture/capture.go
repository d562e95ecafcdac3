// Package capture is a fake RocketMQ endpoint that records the raw frames
// real clients send to it. It is used to produce the golden frames under
// remoting/testdata/golden (see scripts/capture-golden.sh) and can serve as
// a test double wherever a test needs to see exactly what a client put on
// the wire.
//
// The listener records every frame it receives, length prefix included,
// into its own file. By default it never answers. With Options.Answer it
// gives the minimal answers that make a producer go on to send a message:
// a route for GET_ROUTEINFO_BY_TOPIC that names the listener itself as the
// master broker, success for SEND_MESSAGE / SEND_MESSAGE_V2 / HEART_BEAT /
// UNREGISTER_CLIENT, and REQUEST_CODE_NOT_SUPPORTED for anything else.
package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Options configures a Listener.
type Options struct {
	// Dir receives one file per frame, named
	// <seq>_<code>_<json|rocketmq>.bin (seq is a 4-digit arrival counter
	// across all connections, starting at 1).
	Dir string
	// Answer enables the minimal answers described in the package comment.
	Answer bool
	// BrokerName and Cluster are used in the route answer (defaults
	// "broker-capture" and "DefaultCluster").
	BrokerName, Cluster string
	// Logf, when set, receives one line per frame and per connection event.
	Logf func(format string, args ...any)
}

// Frame is one recorded frame.
type Frame struct {
	Seq    int
	Remote string
	Path   string
	Raw    []byte // whole frame, length prefix included
	Cmd    *remoting.Command
}

// Listener accepts connections on a loopback address and records frames.
type Listener struct {
	opts Options
	ln   net.Listener
	seq  atomic.Int64
	msg  atomic.Int64

	mu     sync.Mutex
	frames []Frame
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Listen starts a Listener on addr (use "127.0.0.1:0" for a free port).
func Listen(addr string, opts Options) (*Listener, error) {
	if opts.Dir == "" {
		return nil, errors.New("capture: Options.Dir is required")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	if opts.BrokerName == "" {
		opts.BrokerName = "broker-capture"
	}
	if opts.Cluster == "" {
		opts.Cluster = "DefaultCluster"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &Listener{opts: opts, ln: ln, conns: make(map[net.Conn]struct{})}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// Addr is the listening address, host:port.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Frames returns a copy of the frames recorded so far, in arrival order.
func (l *Listener) Frames() []Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Frame(nil), l.frames...)
}

// Close stops accepting, closes every connection and waits for the
// connection goroutines.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.mu.Lock()
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
	return err
}

func (l *Listener) logf(format string, args ...any) {
	if l.opts.Logf != nil {
		l.opts.Logf(format, args...)
	}
}

func (l *Listener) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(1)
		go l.serve(c)
	}
}

func (l *Listener) serve(c net.Conn) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
		c.Close()
	}()
	remote := c.RemoteAddr().String()
	l.logf("capture: connection from %s", remote)
	r := bufio.NewReader(c)
	for {
		raw, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				l.logf("capture: %s: %v", remote, err)
			}
			l.logf("capture: connection from %s closed", remote)
			return
		}
		f, err := l.record(remote, raw)
		if err != nil {
			l.logf("capture: %s: %v", remote, err)
			return
		}
		if !l.opts.Answer || f.Cmd == nil || f.Cmd.IsResponse() || f.Cmd.IsOneway() {
			continue
		}
		resp := l.answer(f.Cmd, c.LocalAddr().String())
		out, err := remoting.Encode(resp)
		if err != nil {
			l.logf("capture: encode answer: %v", err)
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// readFrame reads one whole frame, length prefix included.
func readFrame(r *bufio.Reader) ([]byte, error) {
	head, err := r.Peek(4)
	if err != nil {
		if len(head) == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	n, err := remoting.FrameLength(head, remoting.DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func (l *Listener) record(remote string, raw []byte) (Frame, error) {
	seq := int(l.seq.Add(1))
	f := Frame{Seq: seq, Remote: remote, Raw: raw}
	cmd, derr := remoting.Decode(raw[4:])
	name := fmt.Sprintf("%04d_undecodable.bin", seq)
	if derr == nil {
		f.Cmd = cmd
		name = fmt.Sprintf("%04d_%d_%s.bin", seq, cmd.Code, serName(cmd.SerializeType))
	}
	f.Path = filepath.Join(l.opts.Dir, name)
	if err := os.WriteFile(f.Path, raw, 0o644); err != nil {
		return f, err
	}
	l.mu.Lock()
	l.frames = append(l.frames, f)
	l.mu.Unlock()
	if derr != nil {
		l.logf("capture: #%d from %s: %d bytes, decode error: %v -> %s", seq, remote, len(raw), derr, f.Path)
	} else {
		l.logf("capture: #%d from %s: code=%d lang=%s ser=%s opaque=%d flag=%d ext=%v body=%d bytes -> %s",
			seq, remote, cmd.Code, cmd.Language, cmd.SerializeType, cmd.Opaque, cmd.Flag, cmd.ExtFields, len(cmd.Body), f.Path)
	}
	return f, nil
}

// serName is the file-name spelling of a serialization.
func serName(t remoting.SerializeType) string {
	switch t {
	case remoting.SerializeJSON:
		return "json"
	case remoting.SerializeRocketMQ:
		return "rocketmq"
	}
	return "ser" + strconv.Itoa(int(t))
}

// answer builds the minimal response to req; self is the address the client
// reached us on, advertised as the master broker in route answers.
func (l *Listener) answer(req *remoting.Command, self string) *remoting.Command {
	switch req.Code {
	case code.GetRouteInfoByTopic:
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = RouteJSON(l.opts.Cluster, l.opts.BrokerName, self)
		return resp
	case code.SendMessage, code.SendMessageV2:
		resp := remoting.NewResponse(req, code.Success, "")
		n := l.msg.Add(1)
		queueID := req.Ext("queueId")
		if queueID == "" {
			queueID = req.Ext("e")
		}
		if queueID == "" {
			queueID = "0"
		}
		resp.SetExt("msgId", fmt.Sprintf("7F00000100002A9F%016X", n))
		resp.SetExt("queueId", queueID)
		resp.SetExt("queueOffset", strconv.FormatInt(n-1, 10))
		resp.SetExt("MSG_REGION", "DefaultRegion")
		resp.SetExt("TRACE_ON", "false")
		return resp
	case code.HeartBeat, code.UnregisterClient:
		return remoting.NewResponse(req, code.Success, "")
	}
	return remoting.NewResponse(req, code.RequestCodeNotSupported,
		" request type "+strconv.Itoa(int(req.Code))+" not supported")
}

// RouteJSON is the TopicRouteData body (docs/protocol.md §4.2) of a topic served
// by one master broker at addr with 4 read/write queues, in the compact
// quoted-key form both client-go and Java accept.
func RouteJSON(cluster, brokerName, addr string) []byte {
	return []byte(`{"brokerDatas":[{"brokerAddrs":{"0":"` + addr + `"},"brokerName":"` + brokerName +
		`","cluster":"` + cluster + `","enableActingMaster":false}],"filterServerTable":{},` +
		`"queueDatas":[{"brokerName":"` + brokerName + `","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`)
}
