// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title DevMulticall3 — DEVNET ONLY. A minimal stand-in for Multicall3.
/// @dev A fresh anvil chain has no Multicall3 at 0xcA11bde05977b3631167028862bE2a173976CA11. The
///      x402 EVM facilitator uses `tryAggregate` there to diagnose a failed EIP-3009 simulation
///      (nonce already used, insufficient balance, wrong name/version); without it every failure is
///      reported as a generic "simulation failed". viem's `multicall` uses `aggregate3`.
///      The devnet places this runtime code at that address with anvil_setCode: it is stateless.
contract DevMulticall3 {
    struct Call {
        address target;
        bytes callData;
    }

    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function tryAggregate(bool requireSuccess, Call[] calldata calls)
        public
        payable
        returns (Result[] memory returnData)
    {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) {
                require(success, "Multicall3: call failed");
            }
            returnData[i] = Result(success, ret);
        }
    }

    function aggregate3(Call3[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(success || calls[i].allowFailure, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }

    function getBlockNumber() external view returns (uint256) {
        return block.number;
    }

    function getCurrentBlockTimestamp() external view returns (uint256) {
        return block.timestamp;
    }

    function getChainId() external view returns (uint256) {
        return block.chainid;
    }
}
