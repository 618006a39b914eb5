package experiment

// kitServer is a server the kit starts itself, named in --servers.
type kitServer struct {
	name, about string
	// jvm: a Java server, built from examples/java and warmed up after
	// every start.
	jvm bool
}

// kitServers are --servers' names, in the order a plan measures them.
var kitServers = []kitServer{
	{name: "loop", about: "the kit's event-loop server, one per --engines (gnet, evio, nbio)"},
	{name: "pool", about: "the kit's pool of --slots worker slots"},
	{name: "netty", about: "the published experiment's Netty 4.1 server: --loops NioEventLoopGroup loops, Thread.sleep on the loop", jvm: true},
	{name: "tomcat", about: "the published experiment's embedded Tomcat 10.1: --slots request threads", jvm: true},
	{name: "nethttp", about: "Go's net/http as it comes: a goroutine per connection, no pool (the pool server with --slots 0)"},
	{name: "fasthttp", about: "valyala/fasthttp with its default worker pool (a worker goroutine per connection, up to 256 Ki)"},
	{name: "netpoll", about: "cloudwego/netpoll: event loops that hand each connection's requests to a goroutine of its pool"},
}

// LoopEngines are the loop server's engines, --engines' names.
var LoopEngines = []string{"gnet", "evio", "nbio"}

// KitServers are the names --servers takes, in the catalogue's order.
func KitServers() []string { return kitServerNames() }

func kitServerNames() []string {
	var out []string
	for _, k := range kitServers {
		out = append(out, k.name)
	}
	return out
}

// kitNames are the names the kit's servers take in a run: a target may
// not take one.
var kitNames = []string{"loop-gnet", "loop-evio", "loop-nbio", "pool", "netty", "tomcat", "nethttp", "fasthttp", "netpoll"}

// jvmServer says whether the server is one of the Java servers.
func jvmServer(s Server) bool { return s.Engine == "netty" || s.Engine == "tomcat" }

// usesJava says whether the run starts a Java server.
func (o Options) usesJava() bool {
	for _, s := range o.Servers {
		if s == "netty" || s == "tomcat" {
			return true
		}
	}
	return false
}
