	.text
	.p2align 4
	.globl	least_rotation
	.type	least_rotation, @function
least_rotation:
.LFB23:
	.cfi_startproc
	movq	%rdi, %r8
	movl	$1, %r9d
	xorl	%r10d, %r10d
	cmpl	$1, %esi
	jle	.L1
	.p2align 4,,10
	.p2align 3
.L2:
	xorl	%ecx, %ecx
	jmp	.L6
	.p2align 4,,10
	.p2align 3
.L5:
	addl	$1, %ecx
	cmpl	%ecx, %esi
	je	.L4
.L6:
	leal	(%r10,%rcx), %eax
	cltd
	idivl	%esi
	leal	(%r9,%rcx), %eax
	movslq	%edx, %rdi
	cltd
	idivl	%esi
	movslq	%edx, %rdx
	movzbl	(%r8,%rdx), %eax
	cmpb	%al, (%r8,%rdi)
	je	.L5
	cmpl	%ecx, %esi
	jle	.L4
	movzbl	(%r8,%rdi), %eax
	cmpb	%al, (%r8,%rdx)
	cmovg	%r9d, %r10d
.L4:
	addl	$1, %r9d
	cmpl	%r9d, %esi
	jne	.L2
.L1:
	movl	%r10d, %eax
	ret
	.cfi_endproc
.LFE23:
	.size	least_rotation, .-least_rotation
