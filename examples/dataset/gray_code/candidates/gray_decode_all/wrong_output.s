	.text
	.p2align 4
	.globl	gray_decode_all
	.type	gray_decode_all, @function
gray_decode_all:
.LFB23:
	.cfi_startproc
	testl	%esi, %esi
	jle	.L4
	movslq	%esi, %r8
	xorl	%edx, %edx
	xorl	%esi, %esi
	.p2align 4,,10
	.p2align 3
.L3:
	movl	(%rdi,%rdx,4), %eax
	movl	%eax, %ecx
	shrl	$15, %ecx
	xorl	%eax, %ecx
	movl	%ecx, %eax
	shrl	$8, %eax
	xorl	%ecx, %eax
	movl	%eax, %ecx
	shrl	$4, %ecx
	xorl	%eax, %ecx
	movl	%ecx, %eax
	shrl	$2, %eax
	xorl	%ecx, %eax
	movl	%eax, %ecx
	xorl	%edx, %eax
	addq	$1, %rdx
	shrl	%ecx
	xorl	%ecx, %eax
	addq	%rax, %rsi
	cmpq	%rdx, %r8
	jne	.L3
	movq	%rsi, %rax
	ret
	.p2align 4,,10
	.p2align 3
.L4:
	xorl	%esi, %esi
	movq	%rsi, %rax
	ret
	.cfi_endproc
.LFE23:
	.size	gray_decode_all, .-gray_decode_all
