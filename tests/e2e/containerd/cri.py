"""A CRI client, playing the kubelet's part against containerd: stubs that
grpcio-tools generated at test time from the vendored CRI proto
(third_party/cri-api/cri-runtime-v1-api.proto), one JSON request per line on
stdin, one JSON answer per line on stdout.

usage: cri.py STUBS SOCKET
requests, {"op": OP, ...}:
  version                                    waits (30 s at most) until the CRI
                                             answers; -> runtime name and versions
  run_pod {name, uid, namespace, log_dir, cgroup_parent}
                                             RunPodSandbox on the host network,
                                             no hostname (as the kubelet does for
                                             a host-network pod); -> {"id"}
  create {pod, name, command, cdi, log}      CreateContainer, `cdi` filling
                                             CDI_devices as the kubelet does from
                                             a claim's CDI ids; -> {"id"}
  start {id}                                 StartContainer
  status {id}                                ContainerStatus (verbose); -> state,
                                             host pid, exit code, log path
  stop {id}                                  StopContainer, no grace period
  remove_pod {id}                            StopPodSandbox, RemovePodSandbox
  list_pods                                  -> {"ids"}
A failed call answers {"error": {"code": "UNKNOWN", "details": "..."}}.
"""
import json
import sys
import time

STUBS, SOCKET = sys.argv[1], sys.argv[2]
sys.path.insert(0, STUBS)

import grpc  # noqa: E402

import cri_runtime_v1_api_pb2 as api  # noqa: E402
import cri_runtime_v1_api_pb2_grpc as api_grpc  # noqa: E402

# grpc-core sends the socket path as :authority; "localhost" as Go clients do.
OPTIONS = [("grpc.default_authority", "localhost")]
TIMEOUT = 60


class Client:
    def __init__(self, channel):
        self.runtime = api_grpc.RuntimeServiceStub(channel)
        self.pods = {}

    def version(self, _):
        deadline = time.monotonic() + 30
        while True:
            try:
                reply = self.runtime.Version(api.VersionRequest(version="v1"), timeout=TIMEOUT)
                return {
                    "runtime_name": reply.runtime_name,
                    "runtime_version": reply.runtime_version,
                    "runtime_api_version": reply.runtime_api_version,
                }
            except grpc.RpcError:
                # The CRI plugin answers "not initialized" for a moment
                # after containerd starts serving.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def run_pod(self, req):
        config = api.PodSandboxConfig(
            metadata=api.PodSandboxMetadata(
                name=req["name"], uid=req["uid"], namespace=req["namespace"], attempt=0
            ),
            log_directory=req["log_dir"],
            linux=api.LinuxPodSandboxConfig(
                cgroup_parent=req["cgroup_parent"],
                security_context=api.LinuxSandboxSecurityContext(
                    namespace_options=api.NamespaceOption(network=api.NODE)
                ),
            ),
        )
        reply = self.runtime.RunPodSandbox(api.RunPodSandboxRequest(config=config), timeout=TIMEOUT)
        self.pods[reply.pod_sandbox_id] = config
        return {"id": reply.pod_sandbox_id}

    def create(self, req):
        config = api.ContainerConfig(
            metadata=api.ContainerMetadata(name=req["name"], attempt=0),
            image=api.ImageSpec(image=req["image"]),
            command=req["command"],
            log_path=req["log"],
            CDI_devices=[api.CDIDevice(name=name) for name in req["cdi"]],
        )
        reply = self.runtime.CreateContainer(
            api.CreateContainerRequest(
                pod_sandbox_id=req["pod"], config=config, sandbox_config=self.pods[req["pod"]]
            ),
            timeout=TIMEOUT,
        )
        return {"id": reply.container_id}

    def start(self, req):
        self.runtime.StartContainer(api.StartContainerRequest(container_id=req["id"]), timeout=TIMEOUT)
        return {}

    def status(self, req):
        reply = self.runtime.ContainerStatus(
            api.ContainerStatusRequest(container_id=req["id"], verbose=True), timeout=TIMEOUT
        )
        info = json.loads(reply.info.get("info", "{}"))
        return {
            "state": api.ContainerState.Name(reply.status.state),
            "pid": info.get("pid", 0),
            "exit_code": reply.status.exit_code,
            "log_path": reply.status.log_path,
        }

    def stop(self, req):
        self.runtime.StopContainer(api.StopContainerRequest(container_id=req["id"], timeout=0), timeout=TIMEOUT)
        return {}

    def remove_pod(self, req):
        self.runtime.StopPodSandbox(api.StopPodSandboxRequest(pod_sandbox_id=req["id"]), timeout=TIMEOUT)
        self.runtime.RemovePodSandbox(api.RemovePodSandboxRequest(pod_sandbox_id=req["id"]), timeout=TIMEOUT)
        self.pods.pop(req["id"], None)
        return {}

    def list_pods(self, _):
        reply = self.runtime.ListPodSandbox(api.ListPodSandboxRequest(), timeout=TIMEOUT)
        return {"ids": [pod.id for pod in reply.items]}


def main():
    with grpc.insecure_channel("unix:" + SOCKET, options=OPTIONS) as channel:
        client = Client(channel)
        for line in sys.stdin:
            req = json.loads(line)
            try:
                answer = getattr(client, req["op"])(req)
            except grpc.RpcError as err:
                answer = {"error": {"code": err.code().name, "details": err.details()}}
            print(json.dumps(answer), flush=True)


main()
