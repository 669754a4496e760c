// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Permit2Lite} from "./Permit2Lite.sol";
import {X402Permit2ProxyBase} from "./X402Permit2ProxyBase.sol";

/// @notice A stand-in for x402's upto Permit2 proxy, written for the emulator's local chain from the ABI and witness
/// types the x402 EVM package uses (settle(permit, amount, owner, witness, signature); witness = (to, facilitator, validAfter)):
/// only the facilitator the payer named may settle, and at most the permitted maximum moves. Placed at the canonical
/// proxy address with anvil_setCode. No EIP-2612 path.
contract X402UptoPermit2Proxy is X402Permit2ProxyBase {
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    error AmountExceedsPermitted();
    error UnauthorizedFacilitator();

    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    function settle(
        Permit2Lite.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _checkParties(owner, witness.to);
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
        _checkStarted(witness.validAfter);
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        _transfer(
            permit,
            amount,
            owner,
            witness.to,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
    }

    function settleWithPermit(
        EIP2612Permit calldata,
        Permit2Lite.PermitTransferFrom calldata,
        uint256,
        address,
        Witness calldata,
        bytes calldata
    ) external pure {
        revert Unsupported();
    }
}
