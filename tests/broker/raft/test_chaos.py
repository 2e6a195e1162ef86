"""Seeded runs with crashes, restarts and partitions; the network checks its invariants after every
call (one leader per epoch, a leader's high watermark never goes back, every node's committed
values a prefix of every other's), and at the end the healed quorum converges."""

from __future__ import annotations

import pytest

from tests.broker.raft.network import Network, Node


def append(net: Network, leader: Node, value: bytes) -> None:
    leader.r.append([value], net.now_ms)
    net.settle(leader)


def snapshot(net: Network, leader: Node) -> None:
    replica = leader.r
    hw = replica.high_watermark
    replica.create_snapshot(hw, replica.epoch_of(hw - 1), list(leader.applied), net.now_ms)
    net.settle(leader)


@pytest.mark.parametrize(("voters", "seed"), [(3, s) for s in range(8)] + [(5, s) for s in range(4)])
def test_committed_values_survive_crashes_and_partitions(voters: int, seed: int) -> None:
    net = Network(voters, observers=1, seed=seed)
    net.drop_rate = 0.02
    rng = net.rng
    net.start()
    ids = list(net.nodes)
    voter_ids = ids[:voters]
    counter = 0
    for _ in range(60):
        action = rng.random()
        if action < 0.35:
            leader = net.leader()
            if leader is not None:
                counter += 1
                append(net, leader, b"%d" % counter)
        elif action < 0.5:
            down = [i for i in voter_ids if not net.nodes[i].alive]
            if len(down) < (voters - 1) // 2:
                net.kill(rng.choice([i for i in ids if net.nodes[i].alive]))
        elif action < 0.65:
            down = [i for i in ids if not net.nodes[i].alive]
            if down:
                net.start(rng.choice(down))
        elif action < 0.75:
            shuffled = ids[:]
            rng.shuffle(shuffled)
            cut = rng.randint(1, len(ids) - 1)
            net.partition(shuffled[:cut], shuffled[cut:])
        elif action < 0.85:
            net.heal()
        elif action < 0.9:
            leader = net.leader()
            if leader is not None and leader.r.high_watermark > leader.r.log_start_offset:
                snapshot(net, leader)
        net.run(rng.randint(10, 1500))
    net.heal()
    net.drop_rate = 0.0
    for node_id in ids:
        if not net.nodes[node_id].alive:
            net.start(node_id)
    # an append is only committed once a majority has it: a leader may lose it by losing its
    # leadership first, so ask again until one commits
    for _ in range(10):
        leader = net.wait_for_leader()
        append(net, leader, b"final")
        net.run(3000)
        if all(n.applied and n.applied[-1] == b"final" for n in net.nodes.values()):
            break
    reference = net.nodes[ids[0]].applied
    assert reference[-1:] == [b"final"]
    assert all(n.applied == reference for n in net.nodes.values())
