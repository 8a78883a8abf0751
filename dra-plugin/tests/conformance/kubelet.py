"""A stand-in kubelet: calls the shim over its unix sockets with stubs that
grpcio-tools generated, at test time, from the published kubelet protos.

usage: kubelet.py GEN_DIR SOCKET OP [JSON]
  OP getinfo                       Registration.GetInfo
  OP notify   {"registered": b, "error": s}
  OP prepare-v1 | prepare-v1beta1     {"claims": [{"namespace","uid","name"}]}
  OP unprepare-v1 | unprepare-v1beta1 {"claims": [...]}
Prints the reply as JSON (proto field names) on stdout.
"""
import json
import sys

GEN, SOCKET, OP = sys.argv[1], sys.argv[2], sys.argv[3]
ARG = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
sys.path.insert(0, GEN)

import grpc  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402

import kubelet_dra_v1_api_pb2 as v1  # noqa: E402
import kubelet_dra_v1_api_pb2_grpc as v1_grpc  # noqa: E402
import kubelet_dra_v1beta1_api_pb2 as v1beta1  # noqa: E402
import kubelet_dra_v1beta1_api_pb2_grpc as v1beta1_grpc  # noqa: E402
import kubelet_pluginregistration_v1_api_pb2 as reg  # noqa: E402
import kubelet_pluginregistration_v1_api_pb2_grpc as reg_grpc  # noqa: E402

# grpc-core sends the socket path as :authority, which hyper refuses; the
# kubelet's Go client sends "localhost" the same way.
OPTIONS = [("grpc.default_authority", "localhost")]

with grpc.insecure_channel("unix:" + SOCKET, options=OPTIONS) as channel:
    grpc.channel_ready_future(channel).result(timeout=30)
    if OP == "getinfo":
        reply = reg_grpc.RegistrationStub(channel).GetInfo(reg.InfoRequest(), timeout=30)
    elif OP == "notify":
        status = reg.RegistrationStatus(plugin_registered=ARG["registered"], error=ARG.get("error", ""))
        reply = reg_grpc.RegistrationStub(channel).NotifyRegistrationStatus(status, timeout=30)
    else:
        verb, version = OP.split("-")
        api, stub = {"v1": (v1, v1_grpc), "v1beta1": (v1beta1, v1beta1_grpc)}[version]
        claims = [api.Claim(**c) for c in ARG["claims"]]
        plugin = stub.DRAPluginStub(channel)
        if verb == "prepare":
            reply = plugin.NodePrepareResources(api.NodePrepareResourcesRequest(claims=claims), timeout=45)
        else:
            reply = plugin.NodeUnprepareResources(api.NodeUnprepareResourcesRequest(claims=claims), timeout=45)
    print(json.dumps(MessageToDict(reply, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)))
