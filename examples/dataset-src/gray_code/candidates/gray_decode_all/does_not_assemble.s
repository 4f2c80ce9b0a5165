	.text
	.p2align 4
	.globl	gray_decode_all
	.type	gray_decode_all, @function
gray_decode_all:
.LFB23:
	.cfi_startproc
	testl	%esi, %esi
	jle	.L6
	movslq	%esi, %r8
	xorl	%ecx, %ecx
	xorl	%esi, %esi
	.p2align 4,,10
	.p2align 3
.L5:
	movl	(%rdi,%rcx,4), %eax
	xorl	%edx, %edx
	testl	%eax, %eax
	je	.L3
	.p2align 4,,10
	.p2align 3
.L4:
	xorll	%eax, %edx
	shrl	%eax
	jne	.L4
.L3:
	xorl	%ecx, %edx
	addq	$1, %rcx
	addq	%rdx, %rsi
	cmpq	%rcx, %r8
	jne	.L5
	movq	%rsi, %rax
	ret
.L6:
	xorl	%esi, %esi
	movq	%rsi, %rax
	ret
	.cfi_endproc
.LFE23:
	.size	gray_decode_all, .-gray_decode_all
