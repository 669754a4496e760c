// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Permit2Lite} from "./Permit2Lite.sol";

/// @notice What x402's exact and upto Permit2 proxy stand-ins share: the canonical Permit2 address, the EIP-2612 permit
/// shape of their (unsupported here) settleWithPermit, the errors and event both raise, the checks on the payer, the
/// payee and the start time, and the witness transfer through Permit2. Each proxy keeps its own Witness type, its
/// witness type string and hash, and the order of its checks.
abstract contract X402Permit2ProxyBase {
    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    error InvalidDestination();
    error InvalidOwner();
    error PaymentTooEarly();
    error Unsupported();

    event Settled();

    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;

    /// A payer and a payee, both set.
    function _checkParties(address owner, address to) internal pure {
        if (owner == address(0)) revert InvalidOwner();
        if (to == address(0)) revert InvalidDestination();
    }

    /// Not before the witness's validAfter.
    function _checkStarted(uint256 validAfter) internal view {
        if (block.timestamp < validAfter) revert PaymentTooEarly();
    }

    /// Moves `amount` of the permitted token from `owner` to `to` under the signed witness, then emits Settled.
    function _transfer(
        Permit2Lite.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        address to,
        bytes32 witnessHash,
        string memory witnessTypeString,
        bytes calldata signature
    ) internal {
        Permit2Lite(PERMIT2).permitWitnessTransferFrom(
            permit,
            Permit2Lite.SignatureTransferDetails({to: to, requestedAmount: amount}),
            owner,
            witnessHash,
            witnessTypeString,
            signature
        );
        emit Settled();
    }
}
