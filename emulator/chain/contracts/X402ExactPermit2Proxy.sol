// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Permit2Lite} from "./Permit2Lite.sol";
import {X402Permit2ProxyBase} from "./X402Permit2ProxyBase.sol";

/// @notice A stand-in for x402's exact Permit2 proxy, written for the emulator's local chain from the ABI and witness
/// types the x402 EVM package uses (settle(permit, owner, witness, signature); witness = (to, validAfter)): the whole permitted
/// amount goes to the witness's payee. Placed at the canonical proxy address with anvil_setCode. No EIP-2612 path.
contract X402ExactPermit2Proxy is X402Permit2ProxyBase {
    struct Witness {
        address to;
        uint256 validAfter;
    }

    error InvalidAmount();

    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,uint256 validAfter)");

    function settle(
        Permit2Lite.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _checkParties(owner, witness.to);
        _checkStarted(witness.validAfter);
        if (permit.permitted.amount == 0) revert InvalidAmount();
        _transfer(
            permit,
            permit.permitted.amount,
            owner,
            witness.to,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
    }

    function settleWithPermit(
        EIP2612Permit calldata,
        Permit2Lite.PermitTransferFrom calldata,
        address,
        Witness calldata,
        bytes calldata
    ) external pure {
        revert Unsupported();
    }
}
