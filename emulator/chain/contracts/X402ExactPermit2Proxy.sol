// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Permit2Lite} from "./Permit2Lite.sol";

/// @notice A stand-in for x402's exact Permit2 proxy, written for the emulator's local chain from the ABI and witness
/// types the x402 EVM package uses (settle(permit, owner, witness, signature); witness = (to, validAfter)): the whole permitted
/// amount goes to the witness's payee. Placed at the canonical proxy address with anvil_setCode. No EIP-2612 path.
contract X402ExactPermit2Proxy {
    struct Witness {
        address to;
        uint256 validAfter;
    }

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    error InvalidAmount();
    error InvalidDestination();
    error InvalidOwner();
    error PaymentTooEarly();
    error Unsupported();

    event Settled();

    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,uint256 validAfter)");

    function settle(
        Permit2Lite.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        if (permit.permitted.amount == 0) revert InvalidAmount();
        Permit2Lite(PERMIT2).permitWitnessTransferFrom(
            permit,
            Permit2Lite.SignatureTransferDetails({to: witness.to, requestedAmount: permit.permitted.amount}),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
        emit Settled();
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
