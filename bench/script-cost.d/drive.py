# drive.py PORT SCRIPT MODE CALLS PID: loads SCRIPT into the Redis on
# PORT (redis-server under callgrind, instrumentation off, pid PID),
# warms up, then runs CALLS calls of MODE (one, hot8, dist8, dist8x; see
# bench/script-cost) with callgrind's instrumentation on, and dumps.
# Calls are made as the module makes them (src/core/script.hpp).
import socket, struct, sys, subprocess
port=int(sys.argv[1]); script=open(sys.argv[2],'rb').read(); mode=sys.argv[3]; n=int(sys.argv[4])
s=socket.create_connection(('127.0.0.1',port))
f=s.makefile('rb')
def cmd(*a):
    out=b'*%d\r\n'%len(a)
    for x in a:
        if isinstance(x,str): x=x.encode()
        out+=b'$%d\r\n%s\r\n'%(len(x),x)
    s.sendall(out)
    return read()
def read():
    l=f.readline()
    t=l[:1]
    if t==b'$':
        ln=int(l[1:]); 
        if ln<0: return None
        d=f.read(ln+2); return d[:-2]
    if t==b'*':
        return [read() for _ in range(int(l[1:]))]
    return l
sha=cmd('SCRIPT','LOAD',script).decode()
# the spec's layout of SCRIPT: with the rule's name (and the algorithm
# name's length) since the per-key overrides, before them without
if b"struct.unpack('<dddddd', text)" in script:
    spec=struct.pack('<dddddd',1e9,60e6,0,0,0,14)+b'sliding_window'+b'100r/m'
else:
    spec=struct.pack('<ddddd',1e9,60e6,0,0,0)+b'sliding_window'
# the keys' layout: with each key's block key after them (one MGET per
# call), since the batched reads, the state keys alone before
blocks=b"#KEYS / 2" in script
# a call across slots (a Cluster master's, issue 34): the script with its
# flags, no key declared, the map of the slots' keys last
if mode=='dist8x':
    if b"MAP = ARGV[" not in script:
        sys.exit(3)     # that script has none
    sha=cmd('SCRIPT','LOAD',b'#!lua flags=allow-cross-slot-keys\n'+script).decode()
def call(keys,reqs,across=False):
    if blocks: keys=keys+[k[:-17] for k in keys]
    head=b''
    for k in reqs:
        head+=struct.pack('<ddddd',1,0,k,1,1)
    if across:
        # each key its own slot (its own hash tag): a 1 byte each
        return cmd('EVALSHA',sha,'0',*keys,head,spec,b'\x01'*len(reqs))
    return cmd('EVALSHA',sha,str(len(keys)),*keys,head,spec)
ctr=[0]
def batch():
    if mode=='one': return call(['rl:{10.0.0.1}:0123456789abcdef'],[1])
    if mode=='hot8': return call(['rl:{10.0.0.1}:0123456789abcdef'],[1]*8)
    if mode in ('dist8','dist8x'):
        ctr[0]+=1
        keys=['rl:{10.%d.%d}:0123456789abcdef'%(ctr[0],i) for i in range(8)]
        return call(keys,list(range(1,9)),mode=='dist8x')
for _ in range(20): r=batch()
assert isinstance(r,bytes), r
pid=int(sys.argv[5])
subprocess.run(['callgrind_control','-i','on',str(pid)],capture_output=True)
for _ in range(n): batch()
subprocess.run(['callgrind_control','-i','off',str(pid)],capture_output=True)
subprocess.run(['callgrind_control','-d',str(pid)],capture_output=True)
